"""FastAPI dependencies: the service state, the caller's tenant, the addressed records.

A record the caller lacks raises the operations' `NotFound`, answered 404 by `problems`.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from archivist.service.guards.auth_gate import TENANT_STATE
from archivist.service.operations import documents, knowledge_bases, sessions
from archivist.service.state import ServiceState
from archivist.service.storage.catalog import DocumentRecord, KBRecord
from archivist.service.storage.keys import cached_tenant_for_key, tenant_for_key
from archivist.service.storage.sessions_store import SessionRecord


async def get_state(request: Request) -> ServiceState:
    """The state the app's lifespan opened (async: FastAPI runs a plain function dependency
    in its thread pool, a thread hop per request for an attribute read)."""
    state: ServiceState = request.app.state.service
    return state


_bearer = HTTPBearer(auto_error=False, description="an API key from `archivist keys create`")


async def get_tenant(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    """The tenant of the request's `Authorization: Bearer KEY`; 401 without a valid key."""
    checked: str | None = getattr(request.state, TENANT_STATE, None)
    if checked is not None:  # the auth gate looked the key up before the body was read
        return checked
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing API key: send Authorization: Bearer KEY",
            headers={"WWW-Authenticate": "Bearer"},
        )
    engine = (await get_state(request)).engine
    tenant = cached_tenant_for_key(engine, credentials.credentials)
    if tenant is None:
        tenant = await asyncio.to_thread(tenant_for_key, engine, credentials.credentials)
    if tenant is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "invalid or revoked API key",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return tenant


State = Annotated[ServiceState, Depends(get_state)]
Tenant = Annotated[str, Depends(get_tenant)]


async def get_kb(name: Annotated[str, Path()], tenant: Tenant, state: State) -> KBRecord:
    """The caller's knowledge base `name`; 404 when the tenant has none of that name."""
    return await knowledge_bases.get_kb(state, tenant, name)


KB = Annotated[KBRecord, Depends(get_kb)]


async def get_searched_kb(name: Annotated[str, Path()], tenant: Tenant, state: State) -> KBRecord:
    """`get_kb` for searches, answered from memory when it was found recently."""
    return await knowledge_bases.get_searched_kb(state, tenant, name)


SearchedKB = Annotated[KBRecord, Depends(get_searched_kb)]


async def get_document(document_id: Annotated[str, Path()], kb: KB, state: State) -> DocumentRecord:
    """Document `document_id` of the caller's knowledge base; 404 otherwise."""
    return await documents.get_document(state, kb, document_id)


Document = Annotated[DocumentRecord, Depends(get_document)]


async def get_session(
    session_id: Annotated[str, Path()], tenant: Tenant, state: State
) -> SessionRecord:
    """The caller's chat session `session_id`; 404 otherwise (also another tenant's)."""
    return await sessions.get_session(state, tenant, session_id)


ChatSession = Annotated[SessionRecord, Depends(get_session)]
