"""`create_app`: the FastAPI application of `archivist serve`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from urllib.parse import urlsplit

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.routing import Route

from archivist.embedding import EmbeddingModelBase
from archivist.service import runtime
from archivist.service.chat import configured_chat_model
from archivist.service.guards.auth_gate import AuthGate
from archivist.service.guards.body_limits import BodyLimits
from archivist.service.guards.framing import RequestFraming
from archivist.service.guards.security_headers import SecurityHeaders
from archivist.service.guards.slow_clients import BodyTimeout
from archivist.service.mcp_endpoint import MCP_PATH, mcp_app
from archivist.service.operations.sessions import NO_CHAT_MODEL
from archivist.service.problems import UnhandledErrors, install_problem_handlers
from archivist.service.routers import (
    api_docs,
    documents,
    health,
    knowledge_bases,
    openai_files,
    openai_vector_stores,
    page,
    search,
    sessions,
    supported_types,
)
from archivist.service.schemas import UNAUTHORIZED
from archivist.service.settings import ServiceSettings
from archivist.service.state import ServiceState
from archivist.service.telemetry.metrics import ServiceMetrics, metrics_route
from archivist.service.telemetry.requests import RequestTelemetry

OPEN_ROUTERS = (health, page, api_docs)
"""Routers served without a key: health, the web page and the API docs."""
KEYED_ROUTERS = (
    knowledge_bases,
    documents,
    search,
    supported_types,
    sessions,
    openai_files,
    openai_vector_stores,
)
"""Routers of the `/v1` API and the OpenAI-compatible `/openai/v1`: every call needs a key."""


def create_app(
    settings: ServiceSettings, *, embedding_model: EmbeddingModelBase | None = None
) -> FastAPI:
    """The service over `settings`; its lifespan opens what `archivist worker` opens too
    (`runtime.running_service`) and adds the chat model, the API's state and MCP."""
    return _app(settings, ServiceMetrics() if settings.metrics else None, None, embedding_model)


@asynccontextmanager
async def opened_app(settings: ServiceSettings) -> AsyncIterator[FastAPI]:
    """The service over `settings` with its database, model, store and indexer opened
    before the block, so a setting that cannot work fails here, as the error it is, rather
    than inside the server's startup; closed after the block."""
    metrics = ServiceMetrics() if settings.metrics else None
    async with runtime.running_service(settings, metrics=metrics) as service:
        yield _app(settings, metrics, service, None)


def _answers(settings: ServiceSettings) -> str:
    """What answers questions on the page and at /v1/sessions, in one line."""
    if settings.chat_base_url:
        where = urlsplit(settings.chat_base_url)
        host = where.netloc.rsplit("@", 1)[-1]  # never a password in the log
        return (
            f"{settings.chat_model or 'the default model'} at {where.scheme}://{host}{where.path}"
        )
    return f"none (Ask shows the passages found): {NO_CHAT_MODEL}"


def _app(
    settings: ServiceSettings,
    metrics: ServiceMetrics | None,
    opened: runtime.ServiceRuntime | None,
    embedding_model: EmbeddingModelBase | None,
) -> FastAPI:
    """The application; its lifespan uses `opened`, or opens the service's parts itself."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        chat_model = configured_chat_model(settings)
        runtime.logger.info("answers: %s", _answers(settings))
        try:
            async with AsyncExitStack() as stack:
                service = opened
                if service is None:
                    service = await stack.enter_async_context(
                        runtime.running_service(
                            settings, embedding_model=embedding_model, metrics=metrics
                        )
                    )
                app.state.service = ServiceState.of(service, chat_model)
                async with mcp.running():
                    yield
        finally:
            if chat_model is not None:
                await chat_model.aclose()

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
    app.add_middleware(RequestFraming)  # before any layer reads a body
    app.add_middleware(UnhandledErrors)  # a 500 or 503 still gets the headers and an id
    app.add_middleware(SecurityHeaders)  # on every answer, 400, 401 and 413 too
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
