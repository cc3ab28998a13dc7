"""Benchmark QdrantStore side by side: Qdrant Edge (`:memory:`) vs qdrant-client's local mode.

Random 384-d vectors, documents of 100 chunks, 10 tenants (a tenant filter keeps 10%).
Measures insert throughput and top-5 search latency (unfiltered and tenant-filtered, p50/p95)
at 10k and 100k points; for Edge also after `optimize()` (HNSW built), with recall@5 against
exact search. Run on demand:

    .venv/bin/python -m benchmarks store [--quick] [--output PATH]

Prints a table with Edge's lead as a ratio and writes benchmarks/results/store.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import time
import warnings
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from _common import RESULTS, write_result
from qdrant_client import AsyncQdrantClient

from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.record import VectorRecord
from archivist.rag.store.qdrant import QdrantStore

DIMENSIONS = 384
TOP_K = 5
CHUNKS_PER_DOCUMENT = 100
TENANTS = 10
INSERT_BATCH = 1_000
QUERIES = 200
SECONDS_PER_MEASURE = 20.0
"""A slow backend stops a latency measure after this long (but not before 20 queries)."""


def dataset(size: int, kind: str, seed: int = 0) -> np.ndarray:
    """`size` unit vectors: `random` Gaussian, or `clustered` round 100 centres, like embeddings."""
    rng = np.random.default_rng(seed)
    if kind == "random":
        vectors = rng.standard_normal((size, DIMENSIONS))
    else:
        centres = rng.standard_normal((100, DIMENSIONS))
        vectors = centres[rng.integers(0, 100, size)] + 0.35 * rng.standard_normal(
            (size, DIMENSIONS)
        )
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def records(vectors: np.ndarray, start: int) -> list[VectorRecord]:
    """The records of rows `start`.. of one insert batch; row n is chunk n % 100 of doc n // 100."""
    batch = []
    for offset, vector in enumerate(vectors.tolist()):
        n = start + offset
        batch.append(
            VectorRecord(
                vector=vector,
                document_id=f"doc-{n // CHUNKS_PER_DOCUMENT}",
                chunk=Chunk(
                    content=TextBlock(text=f"chunk {n}"),
                    source=f"doc-{n // CHUNKS_PER_DOCUMENT}.txt",
                    chunk_index=n % CHUNKS_PER_DOCUMENT,
                    total_chunks=CHUNKS_PER_DOCUMENT,
                    metadata={"tenant": f"t{(n // CHUNKS_PER_DOCUMENT) % TENANTS}"},
                ),
            )
        )
    return batch


def row_of(document_id: str, chunk_index: int) -> int:
    return int(document_id.removeprefix("doc-")) * CHUNKS_PER_DOCUMENT + chunk_index


async def insert_all(store: QdrantStore, vectors: np.ndarray) -> float:
    """Write every vector; returns points per second spent inside `insert` (not making records)."""
    spent = 0.0
    for start in range(0, len(vectors), INSERT_BATCH):
        batch = records(vectors[start : start + INSERT_BATCH], start)
        began = time.perf_counter()
        await store.insert("bench", batch)
        spent += time.perf_counter() - began
    return len(vectors) / spent


async def latencies(
    store: QdrantStore, queries: np.ndarray, metadata_filter: dict[str, Any] | None
) -> tuple[list[float], list[list[int]]]:
    """Milliseconds per search, and the rows each search found."""
    await store.search("bench", queries[0].tolist(), TOP_K, metadata_filter)  # warm-up, index
    times, found = [], []
    began_all = time.perf_counter()
    for query in queries:
        began = time.perf_counter()
        hits = await store.search("bench", query.tolist(), TOP_K, metadata_filter)
        times.append((time.perf_counter() - began) * 1000)
        found.append([row_of(hit.document_id, hit.chunk.chunk_index) for hit in hits])
        if time.perf_counter() - began_all > SECONDS_PER_MEASURE and len(times) >= 20:
            break
    return times, found


def exact_rows(vectors: np.ndarray, queries: np.ndarray, tenant: int | None) -> list[list[int]]:
    """The true top-5 rows by cosine similarity (optionally within one tenant)."""
    scores = queries @ vectors.T
    if tenant is not None:
        rows = np.arange(len(vectors))
        scores[:, (rows // CHUNKS_PER_DOCUMENT) % TENANTS != tenant] = -np.inf
    return [list(np.argsort(-row)[:TOP_K]) for row in scores]


def recall(found: list[list[int]], truth: list[list[int]]) -> float:
    pairs = zip(found, truth, strict=False)
    return statistics.fmean(len(set(f) & set(t)) / TOP_K for f, t in pairs)


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "p50_ms": round(ordered[len(ordered) // 2], 3),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 3),
        "queries": len(ordered),
    }


async def measure(
    backend: str,
    make: Callable[[], QdrantStore],
    vectors: np.ndarray,
    queries: np.ndarray,
    build_index: bool,
) -> dict[str, Any]:
    """Insert, then search unfiltered and tenant-filtered (and again after optimize if asked)."""
    tenant = 3
    truth = exact_rows(vectors, queries, None)
    truth_tenant = exact_rows(vectors, queries, tenant)
    result: dict[str, Any] = {"backend": backend, "size": len(vectors)}
    async with make() as store:
        await store.create_collection("bench", DIMENSIONS)
        result["insert_points_per_s"] = round(await insert_all(store, vectors))
        phases = [("plain", False)] + ([("hnsw", True)] if build_index else [])
        for phase, optimize in phases:
            if optimize:
                began = time.perf_counter()
                await store.optimize("bench")
                result["optimize_s"] = round(time.perf_counter() - began, 1)
            times, found = await latencies(store, queries, None)
            times_f, found_f = await latencies(store, queries, {"tenant": f"t{tenant}"})
            result[phase] = {
                "unfiltered": {**summary(times), "recall_at_5": round(recall(found, truth), 3)},
                "filtered": {
                    **summary(times_f),
                    "recall_at_5": round(recall(found_f, truth_tenant), 3),
                },
            }
    return result


def edge() -> QdrantStore:
    return QdrantStore(location=":memory:", auto_optimize_threshold=None)


def local_mode() -> QdrantStore:
    return QdrantStore.from_client(AsyncQdrantClient(location=":memory:"))


async def run(sizes: list[int], clustered_check: bool) -> dict[str, Any]:
    queries_all = dataset(QUERIES, "random", seed=99)
    rows: list[dict[str, Any]] = []
    for size in sizes:
        vectors = dataset(size, "random")
        for backend, make, build in (("edge", edge, True), ("local-mode", local_mode, False)):
            print(f"  {backend} at {size:,} points ...", flush=True)
            rows.append(await measure(backend, make, vectors, queries_all, build))
    extra = []
    if clustered_check:
        size = sizes[-1]
        vectors = dataset(size, "clustered")
        queries = vectors[np.random.default_rng(5).integers(0, size, QUERIES)] + 0.02
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        print(f"  edge at {size:,} clustered points ...", flush=True)
        extra.append({"data": "clustered", **await measure("edge", edge, vectors, queries, True)})
    return {"results": rows, "clustered": extra}


def ratio(slow: float, fast: float) -> str:
    if fast <= 0:
        return "-"
    value = slow / fast
    return f"{value:,.1f}x" if value < 10 else f"{value:,.0f}x"


def table(report: dict[str, Any]) -> str:
    lines = [
        f"{'points':>8} {'backend':<11} {'phase':<6} {'insert/s':>9} "
        f"{'top5 p50':>9} {'p95':>9} {'filt p50':>9} {'p95':>9} {'recall':>7}",
    ]
    by_size: dict[int, dict[str, dict[str, Any]]] = {}
    for row in report["results"] + report["clustered"]:
        label = row["backend"] + ("*" if row.get("data") == "clustered" else "")
        if "data" not in row:
            by_size.setdefault(row["size"], {})[row["backend"]] = row
        for phase in ("plain", "hnsw"):
            if phase not in row:
                continue
            unfiltered, filtered = row[phase]["unfiltered"], row[phase]["filtered"]
            insert = (
                f"{row['insert_points_per_s']:,}"
                if phase == "plain"
                else f"opt {row['optimize_s']}s"
            )
            lines.append(
                f"{row['size']:>8,} {label:<11} {phase:<6} {insert:>9} "
                f"{unfiltered['p50_ms']:>8.2f}m {unfiltered['p95_ms']:>8.2f}m "
                f"{filtered['p50_ms']:>8.2f}m {filtered['p95_ms']:>8.2f}m "
                f"{unfiltered['recall_at_5']:>7.3f}"
            )
    lines.append("")
    lines.append("Edge's lead over local mode (local-mode time / edge time; insert: edge/local):")
    for size, pair in sorted(by_size.items()):
        if "edge" not in pair or "local-mode" not in pair:
            continue
        e, c = pair["edge"], pair["local-mode"]
        parts = [f"insert {ratio(e['insert_points_per_s'], c['insert_points_per_s'])}"]
        for phase in ("plain", "hnsw"):
            if phase in e:
                top5 = ratio(c["plain"]["unfiltered"]["p50_ms"], e[phase]["unfiltered"]["p50_ms"])
                filtered = ratio(c["plain"]["filtered"]["p50_ms"], e[phase]["filtered"]["p50_ms"])
                parts.append(f"{phase}: top5 {top5}, filtered {filtered}")
        lines.append(f"  {size:>8,}: " + "; ".join(parts))
    lines.append("(m = ms; * = clustered, embedding-like data; recall = unfiltered recall@5)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k points only")
    parser.add_argument(
        "--output", type=Path, default=RESULTS / "store.json", help="the JSON file to write"
    )
    arguments = parser.parse_args(argv)
    sizes = [10_000] if arguments.quick else [10_000, 100_000]
    warnings.filterwarnings("ignore", message="Payload indexes have no effect")
    print(f"QdrantStore benchmark: {DIMENSIONS}-d, top-{TOP_K}, sizes {sizes}", flush=True)
    report = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "qdrant-edge-py": version("qdrant-edge-py"),
            "qdrant-client": version("qdrant-client"),
        },
        "dimensions": DIMENSIONS,
        "top_k": TOP_K,
        "tenant_share": 1 / TENANTS,
        **asyncio.run(run(sizes, clustered_check=True)),
    }
    print(table(report))
    path = write_result(arguments.output.with_suffix("").name, report, arguments.output.parent)
    print(f"written to {path}")


if __name__ == "__main__":
    main()
