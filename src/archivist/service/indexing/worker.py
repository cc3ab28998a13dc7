"""An indexer running on its own, without the HTTP API (`archivist worker`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from archivist.embedding import EmbeddingModelBase
from archivist.rag import default_registry
from archivist.rag.chunker import chunker_for
from archivist.rag.store.keyed_lock import KeyedLocks
from archivist.service.app import default_model, kb_profiles
from archivist.service.indexing.indexer import Indexer
from archivist.service.retrieval.vectors import open_store
from archivist.service.settings import ServiceSettings
from archivist.service.storage.database import make_engine
from archivist.service.storage.private_files import make_private
from archivist.service.telemetry.metrics import ServiceMetrics


@asynccontextmanager
async def running_indexer(
    settings: ServiceSettings,
    *,
    embedding_model: EmbeddingModelBase | None = None,
    metrics: ServiceMetrics | None = None,
) -> AsyncIterator[Indexer]:
    """`settings.workers` workers taking jobs from the shared queue while the block runs;
    their jobs, documents and embedding calls are counted in `metrics` when given."""
    make_private(settings, settings.home / "embedding-cache")
    engine = await asyncio.to_thread(make_engine, settings.resolved_database_url)
    try:
        observe = metrics.observe_embedding if metrics is not None else None
        model = embedding_model or default_model(settings, observe)
        chunker = chunker_for(model.chunk_tokenizer(), settings.chunk_size, settings.overlap)
        async with open_store(settings) as store:
            indexer = Indexer(
                settings,
                engine,
                store,
                model,
                default_registry(),
                chunker,
                KeyedLocks(),
                profiles=kb_profiles(settings, model, observe),
                observe=metrics.observe_document if metrics is not None else None,
            )
            await asyncio.to_thread(indexer.files.prepare)
            await indexer.start()
            unwatch = (
                metrics.watch_queue(engine, lambda: len(indexer.in_flight))
                if metrics is not None
                else None
            )
            try:
                yield indexer
            finally:
                if unwatch is not None:
                    unwatch()
                await indexer.stop()
    finally:
        engine.dispose()
