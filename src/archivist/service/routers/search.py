"""`POST /v1/knowledge-bases/{name}/search`: ranked chunks with citations."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from archivist.rag.knowledge import query_cache
from archivist.rag.store.tenant import tenant_scope
from archivist.service.dependencies import SearchedKB, State
from archivist.service.operations import search as operations
from archivist.service.schemas import Hit, Problem, SearchRequest, SearchResponse
from archivist.service.state import ServiceState

router = APIRouter(prefix="/v1/knowledge-bases", tags=["search"])

QUERY_CACHE_BYTES = 32 * 1024 * 1024
"""Memory the cached answers of all knowledge bases may take together."""


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
    cache = answers_cache(request, state)
    scope = query_cache.scope_key(tenant_scope(kb.tenant))  # the filter of the handle searched
    asked = body.model_dump_json()
    if cache is not None:
        cached = cache.get(state.store, kb.collection, scope, asked)
        if cached is not None:
            return Response(cached, media_type="application/json")
    seen = query_cache.generation(state.store, kb.collection)
    results = await operations.search(
        state,
        kb,
        body.query,
        top_k=body.top_k,
        max_per_document=body.max_per_document,
        search_filter=body.search_filter(),
        context=body.context,
        min_relevance=body.min_relevance,
        collapse_duplicates=body.collapse_duplicates,
    )
    # Serialised once here: FastAPI would validate the model again and encode it slower.
    answer = SearchResponse(hits=[Hit.of(result) for result in results]).model_dump_json()
    content = answer.encode()
    if cache is not None:
        cache.put(state.store, kb.collection, scope, asked, content, seen=seen)
    return Response(content, media_type="application/json")
