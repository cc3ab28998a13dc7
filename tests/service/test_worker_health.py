"""A worker reports its health on /metrics, `archivist worker --health` reads it, and a
worker whose database stays out of reach exits for its supervisor to restart it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_helpers import free_port
from sqlalchemy.exc import OperationalError

from archivist.cli.main import main
from archivist.service.indexing import jobs
from archivist.service.indexing.health import IndexerHealth
from archivist.service.indexing.queue_metrics import watch_queue
from archivist.service.storage.database import make_engine
from archivist.service.telemetry.metrics import ServiceMetrics, serve_metrics
from pgvector_server import fresh_database, pgvector_server


def test_health_counts_failures_in_a_row_and_how_long_the_database_is_away() -> None:
    health = IndexerHealth(started=time.time() - 30)
    assert health.out_of_reach_for() == 0
    health.failed()
    health.failed()
    assert health.errors == 2 and health.out_of_reach_for() >= 30  # never reached: since start
    health.ok(claimed=True)
    assert health.errors == 0 and health.out_of_reach_for() == 0
    assert health.last_claim is not None and health.last_claim == health.last_ok


@pytest.fixture
def reported(tmp_path: Path) -> Iterator[tuple[int, IndexerHealth]]:
    """A metrics listener reporting an indexer's health, as `archivist worker` serves it."""
    metrics, health = ServiceMetrics(), IndexerHealth()
    engine = make_engine(f"sqlite:///{tmp_path / 'service.db'}")
    unwatch = watch_queue(metrics.registry, engine, lambda: 0, health)
    port = free_port()
    stop = serve_metrics(metrics, "127.0.0.1", port)
    try:
        yield port, health
    finally:
        stop()
        unwatch()
        engine.dispose()


def test_the_health_check_reads_the_workers_metrics(
    reported: tuple[int, IndexerHealth], capsys: pytest.CaptureFixture[str]
) -> None:
    port, health = reported
    check = ["worker", "--health", "--metrics-port", str(port), "--give-up-seconds", "60"]
    health.ok()
    assert main(check) == 0
    health.failed()  # one failure just now: still within the grace
    assert main(check) == 0
    health.last_ok = time.time() - 120
    assert main(check) == 1
    assert "out of reach" in capsys.readouterr().out
    assert main(["worker", "--health", "--metrics-port", str(free_port())]) == 1
    assert "no worker answers" in capsys.readouterr().out


def test_a_worker_whose_database_stays_away_exits_with_status_3(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def gone(*_: Any, **__: Any) -> None:
        raise OperationalError("SELECT jobs", {}, ConnectionRefusedError("refused"))

    monkeypatch.setattr(jobs, "claim", gone)
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path))
    with pgvector_server() as url:
        database = fresh_database(url, "worker_health")
        started = time.monotonic()
        code = main(
            [
                "worker",
                "--database",
                database,
                "--pgvector-url",
                database,
                "--files-url",
                str(tmp_path / "files"),
                "--give-up-seconds",
                "2",
            ]
        )
    assert code == 3
    assert time.monotonic() - started < 60
