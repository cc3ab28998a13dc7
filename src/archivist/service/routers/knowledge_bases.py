"""`/v1/knowledge-bases`: create (with per-KB indexing), list, rename and delete the caller's
knowledge bases, and the status of many documents in one call."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from archivist.service.dependencies import KB, State, Tenant
from archivist.service.operations import knowledge_bases as operations
from archivist.service.schemas import (
    DocumentOut,
    DocumentStatuses,
    KnowledgeBaseCreate,
    KnowledgeBaseList,
    KnowledgeBaseOut,
    KnowledgeBaseUpdate,
    Problem,
)
from archivist.service.state import ServiceState

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
    kb = await operations.create_kb(
        state,
        tenant,
        body.name,
        body.description,
        embedding_model=body.embedding_model,
        chunk_size=body.chunk_size,
        overlap=body.overlap,
    )
    return await _out(kb, state)


async def _out(kb: KB, state: ServiceState) -> KnowledgeBaseOut:
    """`kb` as answered, with how it indexes."""
    [indexing] = await operations.indexing(state, [kb])
    return KnowledgeBaseOut.of(kb, indexing)


@router.get("")
async def list_knowledge_bases(tenant: Tenant, state: State) -> KnowledgeBaseList:
    """The caller's knowledge bases by name."""
    kbs = await operations.list_kbs(state, tenant)
    indexing = await operations.indexing(state, kbs)
    return KnowledgeBaseList(
        items=[KnowledgeBaseOut.of(kb, how) for kb, how in zip(kbs, indexing, strict=True)]
    )


@router.get("/{name}", responses={404: {"model": Problem}})
async def get_knowledge_base(kb: KB, state: State) -> KnowledgeBaseOut:
    """One knowledge base with how it indexes."""
    return await _out(await operations.counted(state, kb), state)


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
    updated = await operations.update_kb(state, kb, body.name, body.description)
    return await _out(updated, state)


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
    wanted = [i.strip() for raw in ids for i in raw.split(",") if i.strip()]
    statuses = await operations.document_statuses(state, kb, wanted)
    return DocumentStatuses(
        items=[DocumentOut.of(d) for d in statuses.found], missing=statuses.missing
    )


@router.delete(
    "/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={404: {"model": Problem}},
)
async def delete_knowledge_base(kb: KB, state: State) -> Response:
    """Delete a knowledge base with its documents, chunks and files."""
    await operations.delete_kb(state, kb)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
