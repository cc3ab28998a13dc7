"""The service's Prometheus metrics, in a registry of each app's (or worker's) own.

Labels are bounded and never tenant data: route templates (`/v1/knowledge-bases/{name}`,
not the path), methods, status codes, job outcomes and states, embedding input types.

Jobs are counted two ways, each cheap with a million documents: finished jobs by outcome
are counters this process increments as it finishes them (the documents table, which
keeps every outcome, is never scanned); the queue is a gauge read on scrape from the jobs
table, which holds only outstanding jobs (finished ones are deleted) and indexes `state`,
and is read at most once per `QUEUE_READ_SECONDS` however often /metrics is asked. Every
replica reports the same shared queue: aggregate it with `max`, the counters with `sum`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Engine, func, select
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from archivist.service.indexing.health import IndexerHealth
from archivist.service.storage.database import jobs, reading

logger = logging.getLogger(__name__)

METRICS_PATH = "/metrics"

QUEUE_READ_SECONDS = 2.0
"""A queue reading younger than this answers further scrapes."""

JOB_STATES = ("queued", "running")

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

    def watch_queue(
        self, engine: Engine, in_flight: Callable[[], int], health: IndexerHealth | None = None
    ) -> Callable[[], None]:
        """Report the job queue of `engine`, this process's running jobs and its indexer's
        `health` on each scrape; returns the function that stops reporting them."""
        collector = QueueCollector(engine, in_flight, health)
        self.registry.register(collector)
        return lambda: self.registry.unregister(collector)

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric."""
        return generate_latest(self.registry)


_HEALTH = (
    (
        "archivist_indexer_last_ok_timestamp_seconds",
        "When this process's indexer last reached the database (claim, lease renewal, job; "
        "0: not yet).",
    ),
    (
        "archivist_indexer_last_claim_timestamp_seconds",
        "When this process's indexer last claimed a job (0: not yet).",
    ),
    (
        "archivist_indexer_consecutive_errors",
        "Failed tries of this process's indexer in a row (database or file store; 0: healthy).",
    ),
)


class QueueCollector(Collector):
    """The shared queue's jobs by state, read from the database on scrape (at most every
    `QUEUE_READ_SECONDS`), and this process's jobs in flight."""

    def __init__(
        self, engine: Engine, in_flight: Callable[[], int], health: IndexerHealth | None = None
    ) -> None:
        self.engine = engine
        self.in_flight = in_flight
        self.health = health
        self._lock = threading.Lock()
        self._read_at = -QUEUE_READ_SECONDS
        self._counts: dict[str, int] | None = None

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The families `collect` yields, without reading the database."""
        yield GaugeMetricFamily("archivist_index_jobs", "", labels=("state",))
        yield GaugeMetricFamily("archivist_index_in_flight", "")
        if self.health is not None:
            for name, _ in _HEALTH:
                yield GaugeMetricFamily(name, "")

    def collect(self) -> Iterator[GaugeMetricFamily]:
        counts = self._queue()
        if counts is not None:
            family = GaugeMetricFamily(
                "archivist_index_jobs",
                "Indexing jobs in the shared queue by state (queued: waiting; running: leased).",
                labels=("state",),
            )
            for state in JOB_STATES:
                family.add_metric((state,), counts.get(state, 0))
            yield family
        yield GaugeMetricFamily(
            "archivist_index_in_flight",
            "Documents this process is indexing now.",
            value=self.in_flight(),
        )
        if self.health is not None:
            values = {
                "archivist_indexer_last_ok_timestamp_seconds": self.health.last_ok,
                "archivist_indexer_last_claim_timestamp_seconds": self.health.last_claim,
                "archivist_indexer_consecutive_errors": self.health.errors,
            }
            for name, text in _HEALTH:
                value = values[name]
                yield GaugeMetricFamily(name, text, value=0 if value is None else value)

    def _queue(self) -> dict[str, int] | None:
        with self._lock:  # concurrent scrapes share one reading
            if time.monotonic() - self._read_at >= QUEUE_READ_SECONDS:
                try:
                    with reading(self.engine) as db:
                        rows = db.execute(
                            select(jobs.c.state, func.count()).group_by(jobs.c.state)
                        ).all()
                    self._counts = {str(state): int(count) for state, count in rows}
                except Exception:
                    logger.warning("reading the job queue for /metrics failed", exc_info=True)
                    self._counts = None
                self._read_at = time.monotonic()
            return self._counts


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
