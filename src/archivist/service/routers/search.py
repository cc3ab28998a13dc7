"""`POST /v1/knowledge-bases/{name}/search`: ranked chunks with citations."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from archivist.message import TextBlock
from archivist.rag import VectorSearchResult
from archivist.rag.citation import citation
from archivist.rag.search_context import context_text
from archivist.service.dependencies import KB, State
from archivist.service.schemas import (
    SERVICE_KEYS,
    Hit,
    HitContext,
    Problem,
    SearchRequest,
    SearchResponse,
)

router = APIRouter(prefix="/v1/knowledge-bases", tags=["search"])

INTERNAL_KEYS = SERVICE_KEYS


def public_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Chunk metadata without the service's bookkeeping (server paths, hashes, tenant)."""
    return {k: v for k, v in metadata.items() if k not in INTERNAL_KEYS}


def hit_of(result: VectorSearchResult) -> Hit:
    """A store result as an API hit."""
    chunk = result.chunk
    return Hit(
        score=result.score,
        relevance=result.relevance,
        document_id=result.document_id,
        filename=chunk.source,
        chunk_index=chunk.chunk_index,
        text=chunk.content.text if isinstance(chunk.content, TextBlock) else None,
        citation=citation(chunk),
        metadata=public_metadata(chunk.metadata),
        context=None
        if result.context is None
        else HitContext(
            first_chunk=result.context[0].chunk_index,
            last_chunk=result.context[-1].chunk_index,
            text=context_text(result),
        ),
    )


@router.post("/{name}/search", responses={404: {"model": Problem}})
async def search(body: SearchRequest, kb: KB, state: State) -> SearchResponse:
    """The `top_k` chunks of the knowledge base closest to `query`, best first."""
    results = await state.handle(kb).search(
        body.query,
        top_k=body.top_k,
        max_per_document=body.max_per_document,
        search_filter=body.search_filter(),
        context=body.context,
        min_relevance=body.min_relevance,
    )
    return SearchResponse(hits=[hit_of(result) for result in results])
