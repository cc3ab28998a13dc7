"""How long a Qdrant store write keeps the event loop from other tasks.

A ticker task sleeps 2 ms at a time while `QdrantStore.insert` writes chunks of SciFact-query
words (random unit vectors, a hybrid collection, Qdrant Edge on disk); every tick's delay
beyond its 2 ms is the loop's lag. Compare two versions by running this file with each one's
`src` on PYTHONPATH, side by side.

    PYTHONPATH=src .venv/bin/python -m benchmarks write_lag --chunks 4000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from typing import Any

import numpy as np
from _common import write_result
from bench_query_speed import queries

from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.record import VectorRecord
from archivist.rag.store.qdrant import QdrantStore

TICK = 0.002


async def measure(chunks: int, per_insert: int, words_per_chunk: int) -> dict[str, Any]:
    """Loop lag percentiles (ms) and the write's time for `chunks` chunks."""
    words = " ".join(queries()).split()
    rng = np.random.default_rng(0)
    records = []
    for n in range(chunks):
        vector = rng.standard_normal(384).astype(np.float32)
        vector /= np.linalg.norm(vector)
        text = " ".join(words[j] for j in rng.integers(0, len(words), words_per_chunk))
        records.append(
            VectorRecord(
                vector=vector.tolist(),
                document_id=f"d{n // 100}",
                chunk=Chunk(
                    content=TextBlock(text=text),
                    source="bench",
                    chunk_index=n % 100,
                    total_chunks=100,
                ),
            )
        )
    lags: list[float] = []
    done = False

    async def ticker() -> None:
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            lags.append(now - last - TICK)
            last = now

    with tempfile.TemporaryDirectory() as directory:
        async with QdrantStore(path=directory) as store:
            await store.create_collection("c", 384)
            task = asyncio.create_task(ticker())
            started = time.perf_counter()
            for start in range(0, chunks, per_insert):
                await store.insert("c", records[start : start + per_insert])
            seconds = time.perf_counter() - started
            done = True
            await task
    lags.sort()
    return {
        "chunks": chunks,
        "per_insert": per_insert,
        "write_seconds": round(seconds, 2),
        "lag_p50_ms": round(1000 * lags[len(lags) // 2], 1),
        "lag_p99_ms": round(1000 * lags[int(len(lags) * 0.99)], 1),
        "lag_max_ms": round(1000 * lags[-1], 1),
        "load_avg": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=4000)
    parser.add_argument("--per-insert", type=int, default=500)
    parser.add_argument("--words", type=int, default=200, help="words per chunk")
    parser.add_argument("--name", default="write_lag", help="result file name")
    args = parser.parse_args(argv)
    result = asyncio.run(measure(args.chunks, args.per_insert, args.words))
    print(json.dumps(result, indent=2))
    print(f"wrote {write_result(args.name, result)}", file=sys.stderr)


if __name__ == "__main__":
    main()
