"""Data and helpers the suite's drivers share; imports only numpy and the standard library,
so both the Archivist venv and the AgentScope venv can load it."""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

DIMENSIONS = 384
TOP_K = 5
CHUNKS_PER_DOCUMENT = 10
TENANTS = 10
INSERT_BATCH = 1_000
RESULT_MARKER = "SUITE-RESULT "


def vectors(size: int, seed: int = 0) -> np.ndarray:
    """`size` unit vectors clustered round 100 centres (embedding-like), float32."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((100, DIMENSIONS))
    data = centres[rng.integers(0, 100, size)] + 0.35 * rng.standard_normal((size, DIMENSIONS))
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    return data.astype(np.float32)


def query_vectors(count: int, seed: int = 1) -> list[list[float]]:
    """Query vectors drawn like the data but from another seed."""
    return [[float(x) for x in row] for row in vectors(count, seed)]


def document_of(row: int) -> str:
    """Row n is chunk n % 10 of document n // 10."""
    return f"doc-{row // CHUNKS_PER_DOCUMENT}"


def tenant_of(row: int) -> str:
    """Documents are spread round-robin over 10 tenants, so one tenant holds 10%."""
    return f"t{(row // CHUNKS_PER_DOCUMENT) % TENANTS}"


def summary(times: list[float]) -> dict[str, float]:
    """p50 / p95 / mean of latencies in seconds, reported in milliseconds."""
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p95_ms": round(p95 * 1000, 3),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 3),
        "queries": len(ordered),
    }


async def timed_queries(
    search: Callable[[str], Awaitable[Any]], count: int, budget_s: float, minimum: int = 5
) -> list[float]:
    """Latency of `search("q<i>")` for up to `count` queries, stopping after `budget_s`
    (but never before `minimum` queries), after two warm-up calls."""
    for i in range(2):
        await search(f"q{i}")
    times: list[float] = []
    started = time.perf_counter()
    for i in range(count):
        t0 = time.perf_counter()
        await search(f"q{i}")
        times.append(time.perf_counter() - t0)
        if len(times) >= minimum and time.perf_counter() - started > budget_s:
            break
    return times


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def emit(payload: dict[str, Any]) -> None:
    """Print the driver's result as one marked JSON line, with the process's peak RSS."""
    payload = {**payload, "peak_rss_mb": peak_rss_mb()}
    sys.stdout.write(RESULT_MARKER + json.dumps(payload) + "\n")
    sys.stdout.flush()
