"""`POST /v1/knowledge-bases/{name}/search`: ranked chunks with citations."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from archivist.message import TextBlock
from archivist.rag import VectorSearchResult
from archivist.rag.citation import citation
from archivist.rag.ingest import HASH_KEY, PATH_KEY, PIPELINE_KEY
from archivist.service.dependencies import KB, State
from archivist.service.schemas import Hit, Problem, SearchRequest, SearchResponse
from archivist.service.vectors import TENANT_KEY

router = APIRouter(prefix="/v1/knowledge-bases", tags=["search"])

INTERNAL_KEYS = frozenset({PATH_KEY, HASH_KEY, PIPELINE_KEY, TENANT_KEY})


def public_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Chunk metadata without the service's bookkeeping (server paths, hashes, tenant)."""
    return {k: v for k, v in metadata.items() if k not in INTERNAL_KEYS}


def hit_of(result: VectorSearchResult) -> Hit:
    """A store result as an API hit."""
    chunk = result.chunk
    return Hit(
        score=result.score,
        document_id=result.document_id,
        filename=chunk.source,
        chunk_index=chunk.chunk_index,
        text=chunk.content.text if isinstance(chunk.content, TextBlock) else None,
        citation=citation(chunk),
        metadata=public_metadata(chunk.metadata),
    )


@router.post("/{name}/search", response_model=SearchResponse, responses={404: {"model": Problem}})
async def search(body: SearchRequest, kb: KB, state: State) -> Response:
    """The `top_k` chunks of the knowledge base closest to `query`, best first."""
    results = await state.handle(kb).search(body.query, top_k=body.top_k)
    # Serialised once here: FastAPI would validate the model again and encode it slower.
    answer = SearchResponse(hits=[hit_of(result) for result in results]).model_dump_json()
    return Response(answer.encode(), media_type="application/json")
