"""What observability costs: per-request overhead, and the queue gauge with a million jobs.

1. Requests: `archivist serve` of a revision without telemetry (`--base`, exported with
   `git archive`), of this tree with `--no-metrics` (request ids, access record) and of this
   tree with metrics, side by side on 127.0.0.1; Debian's `wrk` drives the cheapest
   authenticated route (`GET /v1/knowledge-bases`) in alternating rounds.
2. Scrapes: on SQLite, the queue gauge's `GROUP BY state` over the jobs table against the
   alternative of counting documents by status, with a million documents and a small or a
   million-job backlog.

    .venv/bin/python -m benchmarks observability --base 5450174
    .venv/bin/python -m benchmarks observability --base 5450174 --seconds 3 --rows 100000

Writes benchmarks/results/observability.json.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

from _common import ROOT, write_result
from service_helpers import ServeProcess, free_port, new_key

from archivist.service import ServiceSettings
from archivist.service.storage.database import make_engine


def export(revision: str, into: Path) -> Path:
    """The `src/` of `revision`, exported from git under `into`."""
    archive = subprocess.run(
        ["git", "archive", revision, "src"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def wrk(url: str, key: str, seconds: int) -> dict[str, float]:
    """Requests/s and latency percentiles (ms) of `wrk` on `url`, 8 connections."""
    done = subprocess.run(
        [
            "wrk",
            "-t2",
            "-c8",
            f"-d{seconds}s",
            "--latency",
            "-H",
            f"Authorization: Bearer {key}",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", done).group(1))  # type: ignore[union-attr]

    def percentile(p: str) -> float:
        found = re.search(rf"^\s+{p}%\s+([\d.]+)(us|ms|s)\s*$", done, re.M)
        assert found, done
        scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[found.group(2)]
        return float(found.group(1)) * scale

    return {"rps": rate, "p50_ms": percentile("50"), "p99_ms": percentile("99")}


def requests(base: str, seconds: int, rounds: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="archivist-obs-"))
    variants = {
        "base": (export(base, tmp / "base"), ()),
        "no_metrics": (ROOT / "src", ("--no-metrics",)),
        "metrics": (ROOT / "src", ()),
    }
    servers: dict[str, tuple[ServeProcess, str]] = {}
    saved = os.environ.get("PYTHONPATH")
    try:
        for name, (src, flags) in variants.items():
            home = tmp / f"home-{name}"
            home.mkdir()
            key = new_key(ServiceSettings(home=home), "acme")
            os.environ["PYTHONPATH"] = str(src)
            serve = ServeProcess(home, free_port(), "--rate", "1000000", *flags)
            serve.start()
            servers[name] = (serve, key)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
        for _ in range(rounds):
            for name, (serve, key) in servers.items():
                runs[name].append(wrk(f"{serve.url}/v1/knowledge-bases", key, seconds))
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
        for serve, _ in servers.values():
            serve.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        name: {
            metric: statistics.median(run[metric] for run in found)
            for metric in ("rps", "p50_ms", "p99_ms")
        }
        for name, found in runs.items()
    }


def in_process(calls: int) -> dict[str, float]:
    """Microseconds per request of a bare ASGI app, and of it behind `RequestTelemetry`
    without and with metrics: the bookkeeping alone, free of network and machine noise."""
    import asyncio

    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route, Router

    from archivist.service.telemetry.metrics import ServiceMetrics
    from archivist.service.telemetry.requests import RequestTelemetry

    async def endpoint(request: Request) -> Response:
        return Response(b"{}", media_type="application/json")

    router = Router([Route("/v1/knowledge-bases/{name}/search", endpoint, methods=["POST"])])

    class App:  # what RequestTelemetry reads of a Starlette app
        def __init__(self) -> None:
            self.router = router

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await router(scope, receive, send)

    app = App()
    apps = {
        "bare": app,
        "ids_and_access_record": RequestTelemetry(app),
        "with_metrics": RequestTelemetry(app, ServiceMetrics()),
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        return None

    async def run(target: Any) -> float:
        start = time.perf_counter()
        for n in range(calls):
            scope = {
                "type": "http",
                "method": "POST",
                "path": f"/v1/knowledge-bases/kb{n % 50}/search",
                "root_path": "",
                "headers": [(b"x-request-id", b"abc")],
                "query_string": b"",
                "app": app,
            }
            await target(scope, receive, send)
        return 1e6 * (time.perf_counter() - start) / calls

    results: dict[str, list[float]] = {name: [] for name in apps}
    for _ in range(5):  # interleaved rounds; the median of each
        for name, target in apps.items():
            results[name].append(asyncio.run(run(target)))
    return {f"{name}_us": statistics.median(found) for name, found in results.items()}


def timed(db: sqlite3.Connection, sql: str, repeat: int = 5) -> float:
    """Median milliseconds of `sql`."""
    times = []
    for _ in range(repeat):
        tick = time.perf_counter()
        db.execute(sql).fetchall()
        times.append(1000 * (time.perf_counter() - tick))
    return statistics.median(times)


def scrapes(rows: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="archivist-obs-db-"))
    try:
        path = tmp / "service.db"
        make_engine(f"sqlite:///{path}").dispose()  # the service's own tables and indexes
        db = sqlite3.connect(path)
        db.execute("PRAGMA foreign_keys=OFF")
        statuses = ("ready", "ready", "ready", "failed")
        db.executemany(
            "INSERT INTO documents VALUES (?, 'kb', 't', 'f.txt', 'text/plain', 'p', 1, ?, 1,"
            " NULL, 0, 0)",
            ((f"d{n}", statuses[n % 4]) for n in range(rows)),
        )
        db.commit()
        queue = "SELECT state, count(*) FROM jobs GROUP BY state"
        documents = "SELECT status, count(*) FROM documents GROUP BY status"
        result: dict[str, Any] = {"documents": rows}
        for backlog in (1000, rows):
            db.execute("DELETE FROM jobs")
            db.executemany(
                "INSERT INTO jobs (document_id, state, attempts, created_at) VALUES (?, ?, 0, 0)",
                ((f"d{n}", "running" if n < 2 else "queued") for n in range(backlog)),
            )
            db.commit()
            result[f"queue_ms_backlog_{backlog}"] = timed(db, queue)
        result["documents_by_status_ms"] = timed(db, documents)
        db.close()
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="a git revision without telemetry")
    parser.add_argument("--seconds", type=int, default=5, help="per wrk run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=1_000_000, help="documents in the catalog")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        print("wrk is not installed (apt-get install wrk); skipping")
        return
    result = {
        "in_process": in_process(20_000),
        "requests": requests(args.base, args.seconds, args.rounds),
        "scrapes": scrapes(args.rows),
        "command": " ".join(
            ["python -m benchmarks observability", *(sys.argv[1:] if argv is None else argv)]
        ),
    }
    write_result("observability", result)


if __name__ == "__main__":
    main()
