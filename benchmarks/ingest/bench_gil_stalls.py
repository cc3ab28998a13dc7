"""How long the store's writes keep every other thread of the process waiting (the GIL).

A service answers `/healthz` and searches on its event loop while uploads are written. A
call into the engine that holds the GIL stops that loop for as long as it runs, whichever
thread makes it. This writes documents through `QdrantStore.replace_document` (Qdrant
Edge on disk, random unit vectors, SciFact abstracts as text when present) while a probe
thread sleeps 0.5 ms in a loop and records how late it wakes: its lateness is the longest
time another thread held the GIL. Each segment size runs in a fresh store.

    python -m benchmarks gil_stalls --segment-points 20000 5000 --chunks 24000
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
from _common import SCIFACT, write_result

from archivist._util.thread_priority import answer_sooner
from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.record import VectorRecord
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant.edge.collection import EdgeCollection

PROBE_SLEEP = 0.0005
DIMENSIONS = 384


class Probe:
    """A thread that wakes every PROBE_SLEEP s and keeps how late each wake-up was."""

    def __init__(self) -> None:
        self.lateness: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            tick = time.perf_counter()
            time.sleep(PROBE_SLEEP)
            self.lateness.append(time.perf_counter() - tick - PROBE_SLEEP)

    def __enter__(self) -> Probe:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def take(self) -> list[float]:
        taken, self.lateness = self.lateness, []
        return taken


def texts() -> list[str]:
    path = SCIFACT / "corpus.jsonl.gz"
    if path.is_file():
        with gzip.open(path, "rt") as handle:
            return [json.loads(line)["text"] for line, _ in zip(handle, range(5_000), strict=False)]
    print(f"note: {path} is absent; synthetic text", file=sys.stderr)
    rng = np.random.default_rng(1)
    words = [f"w{n}" for n in range(5_000)]
    return [" ".join(rng.choice(words, 200)) for _ in range(5_000)]


async def run(
    segment_points: int, chunks: int, per_document: int, corpus: list[str]
) -> dict[str, Any]:
    indexing: list[float] = []
    optimize = EdgeCollection.optimize

    def timed(self: EdgeCollection) -> bool:
        tick = time.perf_counter()
        indexed = optimize(self)
        if indexed:
            indexing.append(time.perf_counter() - tick)
        return indexed

    EdgeCollection.optimize = timed  # type: ignore[method-assign]
    rng = np.random.default_rng(0)
    steps: list[dict[str, float]] = []
    try:
        with tempfile.TemporaryDirectory() as directory, Probe() as probe:
            async with QdrantStore(path=directory, auto_optimize_threshold=segment_points) as store:
                await store.create_collection("c", DIMENSIONS)
                for number in range(chunks // per_document):
                    vectors = rng.standard_normal((per_document, DIMENSIONS)).astype(np.float32)
                    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                    records = [
                        VectorRecord(
                            vector=vectors[i].tolist(),
                            document_id=f"d{number}",
                            chunk=Chunk(
                                content=TextBlock(
                                    text=corpus[(number * per_document + i) % len(corpus)]
                                ),
                                source=f"d{number}.txt",
                                chunk_index=i,
                                total_chunks=per_document,
                            ),
                        )
                        for i in range(per_document)
                    ]

                    async def batches(
                        records: list[VectorRecord] = records,
                    ) -> AsyncIterator[list[VectorRecord]]:
                        for start in range(0, len(records), 32):
                            yield records[start : start + 32]

                    probe.take()
                    tick = time.perf_counter()
                    await store.replace_document("c", f"d{number}", batches())
                    wall = time.perf_counter() - tick
                    late = probe.take() or [0.0]
                    steps.append({"wall_ms": 1000 * wall, "max_stall_ms": 1000 * max(late)})
    finally:
        EdgeCollection.optimize = optimize  # type: ignore[method-assign]
    stalls = sorted(step["max_stall_ms"] for step in steps)
    return {
        "segment_points": segment_points,
        "chunks": chunks,
        "documents": len(steps),
        "segments_indexed": len(indexing),
        "indexing_ms": [round(1000 * seconds, 1) for seconds in indexing],
        "max_stall_ms": round(stalls[-1], 1),
        "median_step_max_stall_ms": round(stalls[len(stalls) // 2], 1),
        "steps_with_stall_over_100ms": sum(stall > 100 for stall in stalls),
        "write_seconds": round(sum(step["wall_ms"] for step in steps) / 1000, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--segment-points", type=int, nargs="+", default=[20_000, 5_000])
    parser.add_argument("--chunks", type=int, default=24_000)
    parser.add_argument("--per-document", type=int, default=640)
    parser.add_argument("--name", default="gil-stalls")
    args = parser.parse_args(argv)
    answer_sooner()  # what `archivist serve` does
    corpus = texts()
    results = []
    for size in args.segment_points:
        result = asyncio.run(run(size, args.chunks, args.per_document, corpus))
        print(json.dumps(result), flush=True)
        results.append(result)
    print(write_result(args.name, {"runs": results, "load_avg": os.getloadavg()}))


if __name__ == "__main__":
    main()
