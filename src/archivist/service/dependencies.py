"""FastAPI dependencies: the service state, the caller's tenant, the addressed records."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Engine

from archivist.embedding import EmbeddingModelBase
from archivist.model import ChatModelBase
from archivist.rag import KnowledgeBase, ParserRegistry
from archivist.rag.store.base import VectorStoreBase
from archivist.rag.store.keyed_lock import KeyedLocks
from archivist.service.guards.auth_gate import TENANT_STATE
from archivist.service.indexing.indexer import Indexer
from archivist.service.retrieval.kb_profiles import KBProfiles
from archivist.service.retrieval.vectors import kb_handle
from archivist.service.settings import ServiceSettings
from archivist.service.storage import catalog, sessions_store
from archivist.service.storage.catalog import DocumentRecord, KBRecord
from archivist.service.storage.file_store import FileStore
from archivist.service.storage.keys import cached_tenant_for_key, tenant_for_key
from archivist.service.storage.sessions_store import SessionRecord


@dataclass
class ServiceState:
    """What the running service holds open: database, store, model and the workers."""

    settings: ServiceSettings
    engine: Engine
    store: VectorStoreBase
    model: EmbeddingModelBase
    registry: ParserRegistry
    indexer: Indexer
    locks: KeyedLocks
    chat_model: ChatModelBase | None = None
    """The OpenAI-compatible chat server answers come from; None when not configured."""
    profiles: KBProfiles | None = None
    """Each knowledge base's own embedding model and chunker; None: all use `model`."""
    answering: set[str] = field(default_factory=set)
    """Sessions with an answer in progress in this process (one at a time per session)."""

    @property
    def files(self) -> FileStore:
        """Where uploads are kept (shared by every replica and worker)."""
        return self.indexer.files

    def model_for(self, kb: KBRecord) -> EmbeddingModelBase:
        """The model `kb` embeds with (loaded on first use for a knowledge base that chose
        another local model)."""
        return self.profiles.model(kb) if self.profiles is not None else self.model

    async def handle(self, kb: KBRecord) -> KnowledgeBase:
        """A tenant-confined handle on `kb`, embedding with the knowledge base's model; a
        model not yet loaded is loaded in a worker thread, never on the event loop."""
        model = self.profiles.loaded(kb) if self.profiles is not None else self.model
        if model is None:
            model = await asyncio.to_thread(self.model_for, kb)
        return kb_handle(kb, self.store, model)


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
    kb = await asyncio.to_thread(catalog.get_kb, state.engine, tenant, name)
    if kb is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no knowledge base {name!r}")
    return kb


KB = Annotated[KBRecord, Depends(get_kb)]


async def searched_kb(state: ServiceState, tenant: str, name: str) -> KBRecord | None:
    """The tenant's knowledge base `name` to search, or None: from memory when it was found
    in the last `catalog.KB_CACHE_SECONDS` (a search needs only what never changes about it)."""
    kb = catalog.recent_kb(state.engine, tenant, name)
    if kb is None:
        kb = await asyncio.to_thread(catalog.get_kb, state.engine, tenant, name)
    return kb


async def get_searched_kb(name: Annotated[str, Path()], tenant: Tenant, state: State) -> KBRecord:
    """`get_kb` for searches, answered from memory when it was found recently."""
    kb = await searched_kb(state, tenant, name)
    if kb is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no knowledge base {name!r}")
    return kb


SearchedKB = Annotated[KBRecord, Depends(get_searched_kb)]


async def get_document(document_id: Annotated[str, Path()], kb: KB, state: State) -> DocumentRecord:
    """Document `document_id` of the caller's knowledge base; 404 otherwise."""
    document = await asyncio.to_thread(catalog.get_document, state.engine, kb.id, document_id)
    if document is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no document {document_id!r}")
    return document


Document = Annotated[DocumentRecord, Depends(get_document)]


async def get_session(
    session_id: Annotated[str, Path()], tenant: Tenant, state: State
) -> SessionRecord:
    """The caller's chat session `session_id`; 404 otherwise (also another tenant's)."""
    session = await asyncio.to_thread(sessions_store.get_session, state.engine, tenant, session_id)
    if session is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no session {session_id!r}")
    return session


ChatSession = Annotated[SessionRecord, Depends(get_session)]
