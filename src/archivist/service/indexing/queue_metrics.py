"""The indexing queue on `/metrics`: its jobs by state, this process's jobs in flight and its
indexer's health, read on scrape.

The queue is a gauge read from the jobs table, which holds only outstanding jobs (finished
ones are deleted) and indexes `state`, so it is cheap with a million documents; it is read at
most once per `QUEUE_READ_SECONDS` however often /metrics is asked. Every replica reports
the same shared queue: aggregate it with `max`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Engine, func, select

from archivist.service.indexing.health import IndexerHealth
from archivist.service.storage.database import jobs, reading

logger = logging.getLogger(__name__)

QUEUE_READ_SECONDS = 2.0
"""A queue reading younger than this answers further scrapes."""

JOB_STATES = ("queued", "running")

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


def watch_queue(
    registry: CollectorRegistry,
    engine: Engine,
    in_flight: Callable[[], int],
    health: IndexerHealth | None = None,
) -> Callable[[], None]:
    """Report the job queue of `engine`, this process's running jobs and its indexer's
    `health` in `registry` on each scrape; returns the function that stops reporting them."""
    collector = QueueCollector(engine, in_flight, health)
    registry.register(collector)
    return lambda: registry.unregister(collector)
