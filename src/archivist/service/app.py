"""`create_app`: the FastAPI application of `archivist serve`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.routing import Route

from archivist.embedding import EmbeddingModelBase
from archivist.rag import default_registry
from archivist.rag.chunker import chunker_for
from archivist.rag.store.keyed_lock import KeyedLocks
from archivist.service.chat import configured_chat_model
from archivist.service.dependencies import ServiceState
from archivist.service.guards.auth_gate import AuthGate
from archivist.service.guards.body_limits import BodyLimits
from archivist.service.guards.security_headers import SecurityHeaders
from archivist.service.guards.slow_clients import BodyTimeout
from archivist.service.indexing.indexer import Indexer
from archivist.service.indexing.offload import OffloadedChunker
from archivist.service.mcp_endpoint import MCP_PATH, mcp_app
from archivist.service.problems import install_problem_handlers
from archivist.service.retrieval.embedding import EmbeddingObserver, service_model
from archivist.service.retrieval.kb_profiles import KBProfiles
from archivist.service.retrieval.vectors import open_store
from archivist.service.routers import (
    api_docs,
    documents,
    health,
    knowledge_bases,
    page,
    search,
    sessions,
    supported_types,
)
from archivist.service.schemas import UNAUTHORIZED
from archivist.service.settings import ServiceSettings
from archivist.service.storage.database import make_engine
from archivist.service.storage.private_files import make_private
from archivist.service.telemetry.metrics import ServiceMetrics, metrics_route
from archivist.service.telemetry.requests import RequestTelemetry


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


OPEN_ROUTERS = (health, page, api_docs)
"""Routers served without a key: health, the web page and the API docs."""
KEYED_ROUTERS = (knowledge_bases, documents, search, supported_types, sessions)
"""Routers of the `/v1` API: every call needs a key."""


def create_app(
    settings: ServiceSettings, *, embedding_model: EmbeddingModelBase | None = None
) -> FastAPI:
    """The service over `settings`; database, store and workers open with the app's lifespan."""
    metrics = ServiceMetrics() if settings.metrics else None
    observe_embedding = metrics.observe_embedding if metrics is not None else None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        make_private(settings, settings.home / "embedding-cache")
        engine = await asyncio.to_thread(make_engine, settings.resolved_database_url)
        model = embedding_model or default_model(settings, observe_embedding)
        registry = default_registry()
        chunker = OffloadedChunker(
            chunker_for(model.chunk_tokenizer(), settings.chunk_size, settings.overlap),
            settings.index_niceness,
        )
        profiles = kb_profiles(settings, model, observe_embedding)
        locks = KeyedLocks()
        chat_model = configured_chat_model(settings)
        try:
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
                app.state.service = ServiceState(
                    settings, engine, store, model, registry, indexer, locks, chat_model, profiles
                )
                await indexer.start()
                unwatch = (
                    metrics.watch_queue(engine, lambda: len(indexer.in_flight))
                    if metrics is not None
                    else None
                )
                try:
                    async with mcp.running():
                        yield
                finally:
                    if unwatch is not None:
                        unwatch()
                    await indexer.stop()
        finally:
            if chat_model is not None:
                await chat_model.aclose()
            engine.dispose()

    app = FastAPI(
        title="Archivist knowledge service",
        summary="Tenant-scoped knowledge bases: upload files, watch them index, search them.",
        version="1",
        lifespan=lifespan,
        docs_url=None,  # served by routers/api_docs.py, offline and under the CSP
        redoc_url=None,
    )
    app.add_middleware(
        BodyLimits, upload_bytes=settings.max_upload_bytes, json_bytes=settings.max_json_bytes
    )
    app.add_middleware(
        BodyTimeout,
        idle_seconds=settings.body_idle_seconds,
        total_seconds=settings.body_timeout_seconds,
    )
    app.add_middleware(
        AuthGate, rate=settings.rate_per_second, burst=settings.rate_burst
    )  # outside BodyLimits: no key, no byte read
    app.add_middleware(SecurityHeaders)  # on every answer, 401 and 413 too
    app.add_middleware(RequestTelemetry, metrics=metrics)  # outermost: ids and timing of all
    install_problem_handlers(app)
    for module in OPEN_ROUTERS:
        app.include_router(module.router)
    for module in KEYED_ROUTERS:
        app.include_router(module.router, responses=UNAUTHORIZED)
    app.mount("/static", StaticFiles(directory=page.STATIC_DIR), name="static")
    app.mount("/docs-assets", StaticFiles(directory=api_docs.swagger_ui_dir()), name="docs-assets")
    mcp = mcp_app(lambda: app.state.service)
    app.router.routes.append(Route(MCP_PATH, mcp, include_in_schema=False))
    if metrics is not None:  # open like /healthz; `--no-metrics` turns it off
        app.router.routes.append(metrics_route(metrics))
    return app
