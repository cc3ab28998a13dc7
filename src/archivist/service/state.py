"""`ServiceState`: what the running service holds open, shared by the routes, MCP and the
operations (no web framework here, so the operations run without one)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from sqlalchemy import Engine

from archivist.embedding import EmbeddingModelBase
from archivist.model import ChatModelBase
from archivist.rag import KnowledgeBase, ParserRegistry
from archivist.rag.knowledge import factories
from archivist.rag.store.base import VectorStoreBase
from archivist.rag.store.keyed_lock import KeyedLocks
from archivist.service.indexing.indexer import Indexer
from archivist.service.retrieval.kb_profiles import KBProfiles
from archivist.service.runtime import ServiceRuntime
from archivist.service.settings import ServiceSettings
from archivist.service.storage.catalog import KBRecord
from archivist.service.storage.file_store import FileStore


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

    @classmethod
    def of(cls, service: ServiceRuntime, chat_model: ChatModelBase | None = None) -> ServiceState:
        """The state over what `runtime.running_service` opened, answering with `chat_model`."""
        return cls(
            service.settings,
            service.engine,
            service.store,
            service.model,
            service.registry,
            service.indexer,
            service.locks,
            chat_model,
            service.profiles,
        )

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
        return factories.knowledge_base(
            kb.profile(self.settings.default_profile()), self.store, model
        )
