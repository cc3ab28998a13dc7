"""The service's Prometheus metrics, in a registry of each app's (or worker's) own.

Labels are bounded and never tenant data: route templates (`/v1/knowledge-bases/{name}`,
not the path), methods, status codes, job outcomes and states, embedding input types.

Finished jobs by outcome are counters this process increments as it finishes them (the
documents table, which keeps every outcome, is never scanned): aggregate them over replicas
with `sum`. The shared queue joins the same registry through
`archivist.service.indexing.queue_metrics`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    start_http_server,
)
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

METRICS_PATH = "/metrics"

_HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_INDEX_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
_EMBED_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class ServiceMetrics:
    """The metrics of one service app or worker process, in `self.registry`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "archivist_http_requests",
            "HTTP requests answered, by method, route template and status code.",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "archivist_http_request_duration_seconds",
            "Time from a request's arrival to the end of its answer, by route template.",
            ("method", "route"),
            buckets=_HTTP_BUCKETS,
            registry=self.registry,
        )
        self.in_progress = Gauge(
            "archivist_http_requests_in_progress",
            "HTTP requests being answered now by this process.",
            registry=self.registry,
        )
        self.documents = Counter(
            "archivist_index_jobs_finished",
            "Indexing jobs this process finished, by the document's outcome (ready, failed).",
            ("status",),
            registry=self.registry,
        )
        self.document_seconds = Histogram(
            "archivist_index_document_duration_seconds",
            "Time to index one document (fetch, parse, chunk, embed, store), by outcome.",
            ("status",),
            buckets=_INDEX_BUCKETS,
            registry=self.registry,
        )
        self.embedding_seconds = Histogram(
            "archivist_embedding_duration_seconds",
            "Time of one call to the embedding model (cache hits included), by input type.",
            ("input_type",),
            buckets=_EMBED_BUCKETS,
            registry=self.registry,
        )

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        self.requests.labels(method, route, str(status)).inc()
        self.request_seconds.labels(method, route).observe(seconds)

    def observe_document(self, status: str, seconds: float) -> None:
        """Count one finished indexing job (`status`: the document's, ready or failed)."""
        self.documents.labels(status).inc()
        self.document_seconds.labels(status).observe(seconds)

    def observe_embedding(self, input_type: str, seconds: float) -> None:
        """Time one embedding call (`input_type`: query or document)."""
        self.embedding_seconds.labels(input_type).observe(seconds)

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric."""
        return generate_latest(self.registry)


def metrics_route(metrics: ServiceMetrics) -> Route:
    """`GET /metrics`: the Prometheus text format (collected off the event loop)."""

    async def endpoint(request: Request) -> Response:
        body = await asyncio.to_thread(metrics.exposition)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return Route(METRICS_PATH, endpoint, methods=["GET"], include_in_schema=False)


def serve_metrics(metrics: ServiceMetrics, host: str, port: int) -> Callable[[], None]:
    """Serve `metrics` at `http://HOST:PORT/metrics` from a thread (`archivist worker`);
    returns the function that stops it."""
    server, thread = start_http_server(port, host, registry=metrics.registry)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(5)

    return stop
