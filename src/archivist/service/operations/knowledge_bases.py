"""Knowledge-base operations: look up, create (with its indexing and the tenant's quota),
rename, list, report document statuses and delete with everything stored for it."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from archivist.rag import KnowledgeBase
from archivist.rag.knowledge.profile import KnowledgeProfile
from archivist.service.errors import InvalidRequest, NotFound
from archivist.service.state import ServiceState
from archivist.service.storage import catalog, quotas, upload_records
from archivist.service.storage.catalog import DocumentRecord, KBRecord

MAX_STATUS_IDS = 1000
"""Most document ids one status request may ask about."""


async def get_kb(state: ServiceState, tenant: str, name: str) -> KBRecord:
    """The tenant's knowledge base `name`; NotFound when the tenant has none of that name."""
    kb = await asyncio.to_thread(catalog.get_kb, state.engine, tenant, name)
    if kb is None:
        raise NotFound(f"no knowledge base {name!r}")
    return kb


async def find_searched_kb(state: ServiceState, tenant: str, name: str) -> KBRecord | None:
    """The tenant's knowledge base `name` to search, or None: from memory when it was found
    in the last `catalog.KB_CACHE_SECONDS` (a search needs only what never changes about it)."""
    kb = catalog.recent_kb(state.engine, tenant, name)
    if kb is None:
        kb = await asyncio.to_thread(catalog.get_kb, state.engine, tenant, name)
    return kb


async def get_searched_kb(state: ServiceState, tenant: str, name: str) -> KBRecord:
    """`find_searched_kb`, raising NotFound when the tenant has no knowledge base `name`."""
    kb = await find_searched_kb(state, tenant, name)
    if kb is None:
        raise NotFound(f"no knowledge base {name!r}")
    return kb


async def indexing(
    state: ServiceState, kbs: Sequence[KBRecord]
) -> list[KnowledgeProfile | None]:
    """How each of `kbs` indexes (its own choice or the defaults), with the chunk size it
    cuts (`KBProfiles.shown`); None without per-KB profiles. In a thread: the first look at
    a model's chunker reads its tokenizer."""
    profiles = state.profiles
    if profiles is None:
        return [None for _ in kbs]
    return await asyncio.to_thread(lambda: [profiles.shown(kb) for kb in kbs])


async def list_kbs(state: ServiceState, tenant: str) -> list[KBRecord]:
    """The tenant's knowledge bases by name, with their document counts."""
    return await asyncio.to_thread(catalog.list_kbs, state.engine, tenant)


async def handles(state: ServiceState, tenant: str) -> list[KnowledgeBase]:
    """Tenant-confined handles on every knowledge base of the tenant (for MCP's tools)."""
    records = await asyncio.to_thread(catalog.tenant_kbs, state.engine, tenant)
    return [await state.handle(record) for record in records]


async def counted(state: ServiceState, kb: KBRecord) -> KBRecord:
    """`kb` with its current document count."""
    return await asyncio.to_thread(catalog.counted, state.engine, kb)


async def create_kb(
    state: ServiceState,
    tenant: str,
    name: str,
    description: str = "",
    *,
    embedding_model: str | None = None,
    chunk_size: int | None = None,
    overlap: int | None = None,
) -> KBRecord:
    """Create an empty knowledge base and its collection; `embedding_model`, `chunk_size`
    and `overlap` (unset: the defaults) fix how it indexes for its whole life.

    Raises InvalidRequest for a model or chunk sizes that cannot be used, QuotaExceeded
    when the tenant may have no more, KBExistsError when the name is taken.
    """
    chosen: dict[str, Any] = {}
    if state.profiles is not None and (
        embedding_model is not None or chunk_size is not None or overlap is not None
    ):
        settings = state.settings
        try:
            profile = KnowledgeProfile.of(
                name=name,
                embedding_model=embedding_model or settings.embedding_model,
                chunk_size=chunk_size if chunk_size is not None else settings.chunk_size,
                overlap=overlap if overlap is not None else settings.overlap,
            )
            # recorded as the number it cuts, shown so whether its model is loaded or not
            cuts = await asyncio.to_thread(state.profiles.chunk_size_for, profile)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
        chosen = {
            "embedding_model": profile.embedding_model,
            "chunk_size": cuts,
            "overlap": profile.overlap,
        }
    quota = functools.partial(
        quotas.check_new_kb, tenant=tenant, quota=state.settings.quota_for(tenant)
    )
    kb = await asyncio.to_thread(
        functools.partial(
            catalog.create_kb,
            state.engine,
            tenant,
            name,
            description,
            check=quota,
            **chosen,
        )
    )
    handle = await state.handle(kb)
    await handle.ensure_collection()
    return kb


async def update_kb(
    state: ServiceState, kb: KBRecord, name: str | None = None, description: str | None = None
) -> KBRecord:
    """Rename `kb` and/or change its description (its indexing stays as created); returns
    it counted. KBExistsError when the tenant already has the new name."""
    updated = await asyncio.to_thread(catalog.update_kb, state.engine, kb, name, description)
    return await counted(state, updated)


@dataclass(frozen=True)
class DocumentStatuses:
    """The documents found among the asked ids, and the ids the knowledge base lacks."""

    found: list[DocumentRecord]
    missing: list[str]


async def document_statuses(state: ServiceState, kb: KBRecord, ids: list[str]) -> DocumentStatuses:
    """The records of the documents `ids` names (duplicates asked once); InvalidRequest for
    none or more than `MAX_STATUS_IDS`."""
    wanted = list(dict.fromkeys(ids))
    if not wanted or len(wanted) > MAX_STATUS_IDS:
        raise InvalidRequest(
            f"ids: give between 1 and {MAX_STATUS_IDS} document ids", argument="ids"
        )
    found = await asyncio.to_thread(catalog.documents_by_id, state.engine, kb.id, wanted)
    seen = {d.id for d in found}
    return DocumentStatuses(found, [i for i in wanted if i not in seen])


async def delete_kb(state: ServiceState, kb: KBRecord) -> None:
    """Delete `kb` with its documents, chunks and files; indexing one of its documents in
    this process is stopped, and the delete waits until that has unwound, so nothing writes
    to the collection after it is gone."""
    await asyncio.to_thread(catalog.delete_kb, state.engine, kb.id)
    running = [job for job in state.indexer.in_flight.values() if job.kb.id == kb.id]
    for job in running:
        state.indexer.cancel(job.document.id)
    for job in running:
        async with state.locks.hold(job.document.id):
            pass
    await state.store.delete_collection(kb.collection)
    await asyncio.to_thread(state.files.delete_folder, kb.id)
    await asyncio.to_thread(upload_records.clear_pending, state.engine, [kb.id])
