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
from archivist.rag.chunker import chunker_for
from archivist.rag.store.base import VectorStoreBase
from archivist.rag.store.keyed_lock import KeyedLocks
from archivist.service.indexing.indexer import Indexer
from archivist.service.indexing.queue_metrics import watch_queue
from archivist.service.indexing.sweeper import Sweeper
from archivist.service.retrieval.embedding import EmbeddingObserver, service_model
from archivist.service.retrieval.kb_profiles import KBProfiles
from archivist.service.retrieval.offload import OffloadedChunker
from archivist.service.retrieval.vectors import open_store
from archivist.service.settings import ServiceSettings
from archivist.service.storage.database import make_engine
from archivist.service.storage.private_files import make_private
from archivist.service.telemetry.metrics import ServiceMetrics

STARTUP_LOGGER = "archivist.service.startup"
logger = logging.getLogger(STARTUP_LOGGER)
"""Says at startup what the defaults that depend on what is installed chose."""


def default_model(
    settings: ServiceSettings, observe: EmbeddingObserver | None = None
) -> EmbeddingModelBase:
    """The local model `settings` names; document vectors in the shared on-disk cache."""
    return service_model(
        settings.embedding_model,
        str(settings.home / "embedding-cache"),
        settings.index_threads,
        observe,
        settings.index_niceness,
    )


def kb_profiles(
    settings: ServiceSettings, model: EmbeddingModelBase, observe: EmbeddingObserver | None = None
) -> KBProfiles:
    """Each knowledge base's own model and chunker; other local models load on first use."""
    return KBProfiles(
        settings,
        model,
        lambda name: service_model(
            name,
            str(settings.home / "embedding-cache"),
            settings.index_threads,
            observe,
            settings.index_niceness,
        ),
    )


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
        model = embedding_model or default_model(settings, observe)
        registry = default_registry(settings.ocr_reader())
        logger.info("OCR: %s", settings.ocr_summary())
        loop = type(asyncio.get_running_loop()).__module__.split(".")[0]
        logger.info("event loop: %s", loop)  # uvloop where installed, else asyncio
        chunker = OffloadedChunker(
            chunker_for(model.chunk_tokenizer(), settings.chunk_size, settings.overlap),
            settings.index_niceness,
            process_bytes=0,
            limits=settings.parse_limits,
        )
        profiles = kb_profiles(settings, model, observe)
        locks = KeyedLocks()
        async with open_store(settings) as store:
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
