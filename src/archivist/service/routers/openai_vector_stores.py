"""`/openai/v1/vector_stores`: OpenAI's vector-stores API (stores, their files, file batches,
search) over the tenant's knowledge bases; every call is scoped to the key's tenant."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query

from archivist.service.attributes import attributes_of
from archivist.service.dependencies import State, Tenant
from archivist.service.errors import InvalidRequest
from archivist.service.openai_schemas import (
    BatchCreate,
    SearchRequest,
    StaticStrategy,
    StoreFileCreate,
    StoreFileUpdate,
    VectorStoreCreate,
    VectorStoreUpdate,
    batch_object,
    deleted,
    paginate,
    store_file_object,
    vector_store_id,
    vector_store_object,
)
from archivist.service.operations import knowledge_bases, openai_files
from archivist.service.operations import vector_stores as operations
from archivist.service.operations.vector_stores import Chunking, KBRecord, StoreFile
from archivist.service.state import ServiceState

# Described by OpenAI's API reference, not by this service's /openapi.json (errors differ).
router = APIRouter(prefix="/openai/v1/vector_stores", tags=["openai"], include_in_schema=False)

FileStatus = Literal["in_progress", "completed", "failed", "cancelled"]


@dataclass(frozen=True)
class PageQuery:
    """A list's cursor parameters: `after`, `before`, `limit` and `order`."""

    after: str | None
    before: str | None
    limit: int
    order: Literal["asc", "desc"]

    def of(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        """The page of `items` (oldest first) these parameters ask for."""
        return paginate(
            items, after=self.after, before=self.before, limit=self.limit, order=self.order
        )


async def _page(
    after: Annotated[str | None, Query(max_length=64)] = None,
    before: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Literal["asc", "desc"] = "desc",
) -> PageQuery:
    """The cursor parameters of a list request (async: no thread hop to read them)."""
    return PageQuery(after, before, limit, order)


Page = Annotated[PageQuery, Depends(_page)]


async def _store(vector_store_id: str, tenant: Tenant, state: State) -> KBRecord:
    return await operations.get_store(state, tenant, vector_store_id)


Store = Annotated[KBRecord, Depends(_store)]


def _chunking(strategy: StaticStrategy | Any | None) -> Chunking | None:
    if isinstance(strategy, StaticStrategy):
        return Chunking(strategy.static.max_chunk_size_tokens, strategy.static.chunk_overlap_tokens)
    return None


async def _shown(state: ServiceState, kb: KBRecord) -> dict[str, Any]:
    [view] = await operations.views(state, [kb])
    return vector_store_object(view, await operations.store_files(state, kb))


async def _file_shown(state: ServiceState, kb: KBRecord, file: StoreFile) -> dict[str, Any]:
    profile = await asyncio.to_thread(operations.profile_of, state, kb)
    return store_file_object(file, profile.chunk_size, profile.overlap)


# Vector stores


@router.post("")
async def create_vector_store(
    body: VectorStoreCreate, tenant: Tenant, state: State
) -> dict[str, Any]:
    """A new vector store (a knowledge base), with `file_ids` added to it."""
    for file_id in body.file_ids:  # each the tenant's, before anything is made
        await openai_files.get_file(state, tenant, file_id)
    kb = await operations.create_store(
        state,
        tenant,
        name=body.name,
        description=body.description,
        metadata=body.metadata,
        chunking=_chunking(body.chunking_strategy),
        expires_days=None if body.expires_after is None else body.expires_after.days,
    )
    for file_id in body.file_ids:
        await operations.add_file(state, kb, file_id, None)
    return await _shown(state, kb)


@router.get("")
async def list_vector_stores(tenant: Tenant, state: State, page: Page) -> dict[str, Any]:
    """The tenant's vector stores: every knowledge base, newest first by default."""
    views = await operations.list_stores(state, tenant)
    items = []
    for view in views:
        files = await operations.store_files(state, view.kb)
        items.append(vector_store_object(view, files))
    return page.of(items)


@router.get("/{vector_store_id}")
async def retrieve_vector_store(kb: Store, state: State) -> dict[str, Any]:
    """One vector store, with its file counts."""
    return await _shown(state, kb)


@router.post("/{vector_store_id}")
async def modify_vector_store(kb: Store, state: State, body: VectorStoreUpdate) -> dict[str, Any]:
    """Change the vector store's name, metadata or expiry."""
    await operations.update_store(
        state,
        kb,
        name=body.name,
        metadata=body.metadata,
        expires_days=None if body.expires_after is None else body.expires_after.days,
        expiry_given="expires_after" in body.model_fields_set,
    )
    return await _shown(state, kb)


@router.delete("/{vector_store_id}")
async def delete_vector_store(kb: Store, state: State) -> dict[str, Any]:
    """Delete the vector store and its knowledge base: every file's chunks (the Files stay)."""
    await knowledge_bases.delete_kb(state, kb)
    return deleted(vector_store_id(kb.id), "vector_store.deleted")


@router.post("/{vector_store_id}/search")
async def search_vector_store(kb: Store, state: State, body: SearchRequest) -> dict[str, Any]:
    """The best chunks for the query, by relevance, within the filters on attributes."""
    queries = [body.query] if isinstance(body.query, str) else body.query
    threshold = None if body.ranking_options is None else body.ranking_options.score_threshold
    found = await operations.search(
        state,
        kb,
        queries,
        filters=body.filters,
        max_num_results=body.max_num_results,
        score_threshold=threshold,
    )
    data = [
        {
            "file_id": hit.file_id,
            "filename": hit.filename,
            "score": hit.result.relevance if hit.result.relevance is not None else 0.0,
            "attributes": attributes_of(hit.result.chunk.metadata),
            "content": [{"type": "text", "text": getattr(hit.result.chunk.content, "text", "")}],
        }
        for hit in found
    ]
    return {
        "object": "vector_store.search_results.page",
        "search_query": queries,
        "data": data,
        "has_more": False,
        "next_page": None,
    }


# Files of a vector store


async def _store_file(file_id: str, kb: Store, state: State) -> StoreFile:
    return await operations.get_store_file(state, kb, file_id)


File = Annotated[StoreFile, Depends(_store_file)]


@router.post("/{vector_store_id}/files")
async def create_vector_store_file(
    kb: Store, state: State, body: StoreFileCreate
) -> dict[str, Any]:
    """Add a file to the vector store, with attributes its chunks carry."""
    file = await operations.add_file(
        state, kb, body.file_id, body.attributes, chunking=_chunking(body.chunking_strategy)
    )
    return await _file_shown(state, kb, file)


@router.get("/{vector_store_id}/files")
async def list_vector_store_files(
    kb: Store, state: State, page: Page, filter: FileStatus | None = None
) -> dict[str, Any]:
    """The vector store's files, of one status with `filter`."""
    return await _files_page(state, kb, await operations.store_files(state, kb), filter, page)


async def _files_page(
    state: ServiceState,
    kb: KBRecord,
    files: list[StoreFile],
    status: FileStatus | None,
    page: PageQuery,
) -> dict[str, Any]:
    profile = await asyncio.to_thread(operations.profile_of, state, kb)
    shown = [
        store_file_object(f, profile.chunk_size, profile.overlap)
        for f in files
        if status is None or f.status == status
    ]
    return page.of(shown)


@router.get("/{vector_store_id}/files/{file_id}")
async def retrieve_vector_store_file(kb: Store, file: File, state: State) -> dict[str, Any]:
    """One file of the vector store, with its indexing status."""
    return await _file_shown(state, kb, file)


@router.post("/{vector_store_id}/files/{file_id}")
async def update_vector_store_file(
    kb: Store, file: File, state: State, body: StoreFileUpdate
) -> dict[str, Any]:
    """Replace the file's attributes (its chunks are indexed again to carry them)."""
    updated = await operations.update_attributes(state, kb, file, body.attributes)
    return await _file_shown(state, kb, updated)


@router.delete("/{vector_store_id}/files/{file_id}")
async def delete_vector_store_file(kb: Store, file: File, state: State) -> dict[str, Any]:
    """Take the file out of the vector store (the File itself stays)."""
    await operations.remove_file(state, kb, file)
    return deleted(file.file_id, "vector_store.file.deleted")


@router.get("/{vector_store_id}/files/{file_id}/content")
async def vector_store_file_content(kb: Store, file: File, state: State) -> dict[str, Any]:
    """The file's text as it was parsed and cut, chunk by chunk."""
    texts = await operations.parsed_text(state, kb, file)
    return {
        "object": "vector_store.file_content.page",
        "data": [{"type": "text", "text": text} for text in texts],
        "has_more": False,
        "next_page": None,
    }


# File batches


@router.post("/{vector_store_id}/file_batches")
async def create_file_batch(kb: Store, state: State, body: BatchCreate) -> dict[str, Any]:
    """Add several files at once (`file_ids` with shared attributes, or `files` each with
    its own)."""
    if (body.file_ids is None) == (body.files is None):
        raise InvalidRequest("give file_ids or files, not both", argument="file_ids")
    if body.files is not None:
        wanted = [(f.file_id, f.attributes) for f in body.files]
    else:
        wanted = [(file_id, body.attributes) for file_id in body.file_ids or []]
    if not wanted:
        raise InvalidRequest("a file batch needs at least one file", argument="file_ids")
    batch = await operations.create_batch(state, kb, wanted, _chunking(body.chunking_strategy))
    return batch_object(batch, await operations.store_files(state, kb, batch_id=batch.id))


@router.get("/{vector_store_id}/file_batches/{batch_id}")
async def retrieve_file_batch(kb: Store, batch_id: str, state: State) -> dict[str, Any]:
    """A batch, with the counts of its files by status."""
    batch = await operations.get_batch(state, kb, batch_id)
    return batch_object(batch, await operations.store_files(state, kb, batch_id=batch.id))


@router.post("/{vector_store_id}/file_batches/{batch_id}/cancel")
async def cancel_file_batch(kb: Store, batch_id: str, state: State) -> dict[str, Any]:
    """Stop the batch: its files not indexed yet are taken out (409 when none is left)."""
    batch = await operations.get_batch(state, kb, batch_id)
    await operations.cancel_batch(state, kb, batch)
    batch = await operations.get_batch(state, kb, batch_id)
    return batch_object(batch, await operations.store_files(state, kb, batch_id=batch.id))


@router.get("/{vector_store_id}/file_batches/{batch_id}/files")
async def list_file_batch_files(
    kb: Store,
    batch_id: str,
    state: State,
    page: Page,
    filter: FileStatus | None = None,
) -> dict[str, Any]:
    """The batch's files, of one status with `filter`."""
    batch = await operations.get_batch(state, kb, batch_id)
    files = await operations.store_files(state, kb, batch_id=batch.id)
    return await _files_page(state, kb, files, filter, page)
