"""`/v1/knowledge-bases`: create, list and delete the caller's knowledge bases."""

from __future__ import annotations

import asyncio
import shutil

from fastapi import APIRouter, HTTPException, Response, status

from archivist.service import catalog, quotas
from archivist.service.catalog import KBExistsError
from archivist.service.dependencies import KB, State, Tenant
from archivist.service.schemas import (
    KnowledgeBaseCreate,
    KnowledgeBaseList,
    KnowledgeBaseOut,
    Problem,
)

router = APIRouter(prefix="/v1/knowledge-bases", tags=["knowledge bases"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses={
        403: {"model": Problem, "description": "the tenant's knowledge-base quota is used up"},
        409: {"model": Problem, "description": "the name is taken"},
    },
)
async def create_knowledge_base(
    body: KnowledgeBaseCreate, tenant: Tenant, state: State
) -> KnowledgeBaseOut:
    """Create an empty knowledge base for the caller's tenant."""
    try:
        await asyncio.to_thread(
            quotas.check_new_kb, state.engine, tenant, state.settings.quota_for(tenant)
        )
    except quotas.QuotaExceeded as exc:
        raise HTTPException(status.HTTP_403_FORBIDDEN, str(exc)) from None
    try:
        kb = await asyncio.to_thread(
            catalog.create_kb, state.engine, tenant, body.name, body.description
        )
    except KBExistsError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    await state.handle(kb).ensure_collection()
    return KnowledgeBaseOut.of(kb)


@router.get("")
async def list_knowledge_bases(tenant: Tenant, state: State) -> KnowledgeBaseList:
    """The caller's knowledge bases by name."""
    kbs = await asyncio.to_thread(catalog.list_kbs, state.engine, tenant)
    return KnowledgeBaseList(items=[KnowledgeBaseOut.of(kb) for kb in kbs])


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
    await asyncio.to_thread(shutil.rmtree, state.settings.files_dir / kb.id, ignore_errors=True)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
