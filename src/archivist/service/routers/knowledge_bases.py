"""`/v1/knowledge-bases`: create (with per-KB indexing), list, rename and delete the caller's
knowledge bases, and the status of many documents in one call."""

from __future__ import annotations

import asyncio
import functools
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response, status

from archivist.service.dependencies import KB, ServiceState, State, Tenant
from archivist.service.guards import quotas
from archivist.service.retrieval.kb_profiles import KBIndexing
from archivist.service.schemas import (
    DocumentOut,
    DocumentStatuses,
    KnowledgeBaseCreate,
    KnowledgeBaseList,
    KnowledgeBaseOut,
    KnowledgeBaseUpdate,
    Problem,
)
from archivist.service.storage import catalog
from archivist.service.storage.catalog import KBExistsError, KBRecord

MAX_STATUS_IDS = 1000

router = APIRouter(prefix="/v1/knowledge-bases", tags=["knowledge bases"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses={
        403: {"model": Problem, "description": "the tenant's knowledge-base quota is used up"},
        409: {"model": Problem, "description": "the name is taken"},
        422: {"model": Problem, "description": "an unknown model or chunk sizes that do not fit"},
    },
)
async def create_knowledge_base(
    body: KnowledgeBaseCreate, tenant: Tenant, state: State
) -> KnowledgeBaseOut:
    """Create an empty knowledge base for the caller's tenant.

    `embedding_model`, `chunk_size` and `overlap` fix how its documents are indexed and
    searched for its whole life; left out, the service's defaults apply.
    """
    chosen: KBIndexing | None = None
    if state.profiles is not None and (
        body.embedding_model is not None or body.chunk_size is not None or body.overlap is not None
    ):
        defaults = state.profiles.defaults()
        chosen = KBIndexing(
            embedding_model=body.embedding_model or defaults.embedding_model,
            chunk_size=body.chunk_size if body.chunk_size is not None else defaults.chunk_size,
            overlap=body.overlap if body.overlap is not None else defaults.overlap,
        )
        try:
            await asyncio.to_thread(state.profiles.chunker_for, chosen)
        except ValueError as exc:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    quota = functools.partial(
        quotas.check_new_kb, tenant=tenant, quota=state.settings.quota_for(tenant)
    )
    try:
        kb = await asyncio.to_thread(
            functools.partial(
                catalog.create_kb,
                state.engine,
                tenant,
                body.name,
                body.description,
                check=quota,
                **(chosen.model_dump() if chosen is not None else {}),
            )
        )
    except quotas.QuotaExceeded as exc:
        raise HTTPException(status.HTTP_403_FORBIDDEN, str(exc)) from None
    except KBExistsError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    handle = await state.handle(kb)
    await handle.ensure_collection()
    return _out(kb, state)


def _out(kb: KBRecord, state: ServiceState) -> KnowledgeBaseOut:
    indexing = state.profiles.indexing(kb) if state.profiles is not None else None
    return KnowledgeBaseOut.of(kb, indexing)


@router.get("")
async def list_knowledge_bases(tenant: Tenant, state: State) -> KnowledgeBaseList:
    """The caller's knowledge bases by name."""
    kbs = await asyncio.to_thread(catalog.list_kbs, state.engine, tenant)
    return KnowledgeBaseList(items=[_out(kb, state) for kb in kbs])


@router.get("/{name}", responses={404: {"model": Problem}})
async def get_knowledge_base(kb: KB, state: State) -> KnowledgeBaseOut:
    """One knowledge base with how it indexes."""
    return _out(await asyncio.to_thread(catalog.counted, state.engine, kb), state)


@router.patch(
    "/{name}",
    responses={
        404: {"model": Problem},
        409: {"model": Problem, "description": "the new name is taken"},
    },
)
async def update_knowledge_base(
    body: KnowledgeBaseUpdate, kb: KB, state: State
) -> KnowledgeBaseOut:
    """Rename the knowledge base or change its description (its indexing stays as created)."""
    try:
        updated = await asyncio.to_thread(
            catalog.update_kb, state.engine, kb, body.name, body.description
        )
    except KBExistsError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    return _out(await asyncio.to_thread(catalog.counted, state.engine, updated), state)


@router.get("/{name}/documents/status", responses={404: {"model": Problem}})
async def document_statuses(
    kb: KB,
    state: State,
    ids: Annotated[
        list[str],
        Query(description="document ids, repeated or comma-separated", min_length=1),
    ],
) -> DocumentStatuses:
    """The status of many documents in one call; ids the knowledge base lacks are `missing`."""
    wanted = list(dict.fromkeys(i.strip() for raw in ids for i in raw.split(",") if i.strip()))
    if not wanted or len(wanted) > MAX_STATUS_IDS:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"ids: give between 1 and {MAX_STATUS_IDS} document ids",
        )
    found = await asyncio.to_thread(catalog.documents_by_id, state.engine, kb.id, wanted)
    seen = {d.id for d in found}
    return DocumentStatuses(
        items=[DocumentOut.of(d) for d in found], missing=[i for i in wanted if i not in seen]
    )


@router.delete(
    "/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={404: {"model": Problem}},
)
async def delete_knowledge_base(kb: KB, state: State) -> Response:
    """Delete a knowledge base with its documents, chunks and files."""
    await asyncio.to_thread(catalog.delete_kb, state.engine, kb.id)
    for job in list(state.indexer.in_flight.values()):
        if job.kb.id == kb.id:  # let a running job finish before its collection goes
            async with state.locks.hold(job.document.id):
                pass
    await state.store.delete_collection(kb.collection)
    await asyncio.to_thread(state.files.delete_folder, kb.id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
