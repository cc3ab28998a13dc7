"""Searching one knowledge base: the operation behind `POST .../search`."""

from __future__ import annotations

from archivist.rag import VectorSearchResult
from archivist.rag.store.search_filter import SearchFilter
from archivist.service.state import ServiceState
from archivist.service.storage.catalog import KBRecord


async def search(
    state: ServiceState,
    kb: KBRecord,
    query: str,
    *,
    top_k: int = 5,
    max_per_document: int | None = None,
    search_filter: SearchFilter | None = None,
    context: int = 0,
    min_relevance: float | None = None,
    collapse_duplicates: bool = True,
) -> list[VectorSearchResult]:
    """The `top_k` chunks of `kb` closest to `query`, best first, within the tenant's own."""
    handle = await state.handle(kb)
    return await handle.search(
        query,
        top_k=top_k,
        max_per_document=max_per_document,
        search_filter=search_filter,
        context=context,
        min_relevance=min_relevance,
        collapse_duplicates=collapse_duplicates,
    )
