"""The one place the service's shared parts are built: `archivist serve` and `archivist worker`
both run `running_service`, so they open, index and close the same way."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy import Engine

from archivist.embedding import EmbeddingModelBase
from archivist.rag import ChunkerBase, ParserRegistry, default_registry
from archivist.rag.knowledge import factories
from archivist.rag.knowledge.profile import StoreSpec
from archivist.rag.store.base import VectorStoreBase
from archivist.rag.store.keyed_lock import KeyedLocks
from archivist.service.indexing.indexer import Indexer
from archivist.service.indexing.queue_metrics import watch_queue
from archivist.service.indexing.sweeper import Sweeper
from archivist.service.retrieval.embedding import EmbeddingObserver, service_model
from archivist.service.retrieval.kb_profiles import KBProfiles
from archivist.service.settings import ServiceSettings
from archivist.service.storage.database import make_engine
from archivist.service.storage.private_files import make_private
from archivist.service.telemetry.metrics import ServiceMetrics

STARTUP_LOGGER = "archivist.service.startup"
logger = logging.getLogger(STARTUP_LOGGER)
"""Says at startup what the defaults that depend on what is installed chose."""


def store_spec(settings: ServiceSettings) -> StoreSpec:
    """Where `settings` keep the vectors: PostgreSQL with pgvector, a Qdrant server, or
    Qdrant Edge on disk in a child process (the engine holds the GIL while it indexes a
    segment, which in the service's own process would stop every request)."""
    if settings.pgvector_url:
        return StoreSpec(kind="pgvector", url=settings.pgvector_url)
    if settings.qdrant_url:
        return StoreSpec(kind="qdrant", url=settings.qdrant_url, api_key=settings.qdrant_api_key)
    return StoreSpec(
        path=settings.service_dir / "qdrant",
        in_child_process=True,
        options={"max_open_collections": settings.open_collections},
    )


def kb_profiles(
    settings: ServiceSettings,
    model: EmbeddingModelBase | None = None,
    observe: EmbeddingObserver | None = None,
) -> KBProfiles:
    """Each knowledge base's own model and chunker, `model` (else the local model `settings`
    name) for those that chose none; document vectors in the shared on-disk cache."""

    def load(name: str) -> EmbeddingModelBase:
        return service_model(
            name,
            str(settings.home / "embedding-cache"),
            settings.index_threads,
            observe,
            settings.index_niceness,
        )

    return KBProfiles(settings, model or load(settings.embedding_model), load)


@dataclass(frozen=True)
class ServiceRuntime:
    """What `running_service` holds open while its block runs."""

    settings: ServiceSettings
    engine: Engine
    store: VectorStoreBase
    model: EmbeddingModelBase
    registry: ParserRegistry
    chunker: ChunkerBase
    """The service's default chunker, run off the event loop at `settings.index_niceness`."""
    locks: KeyedLocks
    profiles: KBProfiles
    indexer: Indexer
    """Started: `settings.workers` workers are taking jobs from the queue."""


@asynccontextmanager
async def running_service(
    settings: ServiceSettings,
    *,
    embedding_model: EmbeddingModelBase | None = None,
    metrics: ServiceMetrics | None = None,
) -> AsyncIterator[ServiceRuntime]:
    """Database, model, chunker, store and a started indexer for the block, closed in reverse
    order after it; jobs, documents, embedding calls and the queue are counted in `metrics`."""
    make_private(settings, settings.home / "embedding-cache")
    engine = await asyncio.to_thread(make_engine, settings.resolved_database_url)
    try:
        observe = metrics.observe_embedding if metrics is not None else None
        profiles = kb_profiles(settings, embedding_model, observe)
        model = profiles.model_named(settings.embedding_model)
        registry = default_registry(settings.ocr_reader())
        logger.info("OCR: %s", settings.ocr_summary())
        loop = type(asyncio.get_running_loop()).__module__.split(".")[0]
        logger.info("event loop: %s", loop)  # uvloop where installed, else asyncio
        chunker = profiles.chunker_of(settings.default_profile())
        locks = KeyedLocks()
        async with factories.open_store(store_spec(settings)) as store:
            indexer = Indexer(
                settings,
                engine,
                store,
                model,
                registry,
                chunker,
                locks,
                profiles=profiles,
                observe=metrics.observe_document if metrics is not None else None,
            )
            await asyncio.to_thread(indexer.files.prepare)
            await indexer.start()
            sweeper = Sweeper(
                engine, indexer.files, settings.sweep_grace_seconds, shared=settings.workers > 0
            )
            sweeping = asyncio.create_task(sweeper.run(), name="sweeper")
            unwatch = (
                watch_queue(
                    metrics.registry, engine, lambda: len(indexer.in_flight), indexer.health
                )
                if metrics is not None
                else None
            )
            try:
                yield ServiceRuntime(
                    settings, engine, store, model, registry, chunker, locks, profiles, indexer
                )
            finally:
                if unwatch is not None:
                    unwatch()
                sweeping.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sweeping
                await indexer.stop()
    finally:
        engine.dispose()
