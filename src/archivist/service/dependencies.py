"""FastAPI dependencies: the service state, the caller's tenant, the addressed records."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Engine

from archivist.embedding import EmbeddingModelBase
from archivist.rag import KnowledgeBase, ParserRegistry, QdrantStore
from archivist.service import catalog
from archivist.service.auth_gate import TENANT_STATE
from archivist.service.catalog import DocumentRecord, KBRecord
from archivist.service.indexer import Indexer
from archivist.service.keys import tenant_for_key
from archivist.service.locks import DocumentLocks
from archivist.service.settings import ServiceSettings
from archivist.service.vectors import kb_handle


@dataclass
class ServiceState:
    """What the running service holds open: database, store, model and the workers."""

    settings: ServiceSettings
    engine: Engine
    store: QdrantStore
    model: EmbeddingModelBase
    registry: ParserRegistry
    indexer: Indexer
    locks: DocumentLocks

    def handle(self, kb: KBRecord) -> KnowledgeBase:
        """A tenant-confined handle on `kb`."""
        return kb_handle(kb, self.store, self.model)


def get_state(request: Request) -> ServiceState:
    """The state the app's lifespan opened."""
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
    tenant = await asyncio.to_thread(
        tenant_for_key, get_state(request).engine, credentials.credentials
    )
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
    kb = await asyncio.to_thread(catalog.get_kb, state.engine, tenant, name)
    if kb is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no knowledge base {name!r}")
    return kb


KB = Annotated[KBRecord, Depends(get_kb)]


async def get_document(document_id: Annotated[str, Path()], kb: KB, state: State) -> DocumentRecord:
    """Document `document_id` of the caller's knowledge base; 404 otherwise."""
    document = await asyncio.to_thread(catalog.get_document, state.engine, kb.id, document_id)
    if document is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no document {document_id!r}")
    return document


Document = Annotated[DocumentRecord, Depends(get_document)]
