"""`POST /v1/knowledge-bases/{name}/search`: ranked chunks with citations."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from archivist.message import TextBlock
from archivist.rag import VectorSearchResult
from archivist.rag.knowledge import query_cache
from archivist.rag.knowledge.citation import citation, copy_citation
from archivist.rag.knowledge.context import context_text
from archivist.service.dependencies import SearchedKB, ServiceState, State
from archivist.service.schemas import (
    SERVICE_KEYS,
    Hit,
    HitContext,
    HitCopy,
    Problem,
    SearchRequest,
    SearchResponse,
)

router = APIRouter(prefix="/v1/knowledge-bases", tags=["search"])

INTERNAL_KEYS = SERVICE_KEYS
QUERY_CACHE_BYTES = 32 * 1024 * 1024
"""Memory the cached answers of all knowledge bases may take together."""


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
        also_in=[
            HitCopy(
                document_id=copy.document_id,
                filename=copy.source,
                chunk_index=copy.chunk_index,
                score=copy.score,
                citation=copy_citation(copy),
            )
            for copy in result.also_in
        ],
    )


def answers_cache(request: Request, state: ServiceState) -> query_cache.QueryCache[bytes] | None:
    """This app's cache of recent answers (None when `query_cache_seconds` is 0)."""
    seconds = state.settings.query_cache_seconds
    if not seconds:
        return None
    cache: query_cache.QueryCache[bytes] | None = getattr(request.app.state, "answers", None)
    if cache is None:
        cache = query_cache.QueryCache(ttl=seconds, maxsize=QUERY_CACHE_BYTES, sizeof=len)
        request.app.state.answers = cache
    return cache


@router.post("/{name}/search", response_model=SearchResponse, responses={404: {"model": Problem}})
async def search(body: SearchRequest, kb: SearchedKB, state: State, request: Request) -> Response:
    """The `top_k` chunks of the knowledge base closest to `query`, best first.

    An identical request to the same knowledge base within `query_cache_seconds`, with no
    write to it since, is answered from memory: no embedding, no store search.
    """
    handle = await state.handle(kb)
    cache = answers_cache(request, state)
    scope = query_cache.scope_key(handle.metadata_filter)
    asked = body.model_dump_json()
    if cache is not None:
        cached = cache.get(state.store, kb.collection, scope, asked)
        if cached is not None:
            return Response(cached, media_type="application/json")
    seen = query_cache.generation(state.store, kb.collection)
    results = await handle.search(
        body.query,
        top_k=body.top_k,
        max_per_document=body.max_per_document,
        search_filter=body.search_filter(),
        context=body.context,
        min_relevance=body.min_relevance,
        collapse_duplicates=body.collapse_duplicates,
    )
    # Serialised once here: FastAPI would validate the model again and encode it slower.
    answer = SearchResponse(hits=[hit_of(result) for result in results]).model_dump_json()
    content = answer.encode()
    if cache is not None:
        cache.put(state.store, kb.collection, scope, asked, content, seen=seen)
    return Response(content, media_type="application/json")
