"""What many small collections cost one process: threads, memory maps, RSS, search time.

A service gives each knowledge base its own Edge collection. This writes `--collections` of
them (10 chunks each) into one `QdrantStore(path=...)`, closes it, opens it again (as after a
restart) and searches each collection once, then once more in the same order: the first pass
loads every shard from disk; in the second, with more collections than the store keeps open,
each search loads a shard again. Reported after writing and after each pass: the process's
threads (and the engine's search threads among them), its memory maps against
`vm.max_map_count`, RSS (anonymous and file-backed), and the mean search time. A failure
(such as the engine running out of maps) is reported with the collection it happened at.

    .venv/bin/python -m benchmarks open_collections --collections 300
    .venv/bin/python -m benchmarks open_collections --collections 1000 --max-open 2000

Writes benchmarks/results/open_collections.json (`--name` to change).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import write_result

from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.store import DIMENSIONS, record


def process() -> dict[str, Any]:
    """Threads, memory maps and RSS of this process now (Linux /proc)."""
    tasks = list(Path("/proc/self/task").iterdir())
    status = {
        line.split(":")[0]: int(line.split()[1]) // 1024
        for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith(("VmRSS", "RssAnon", "RssFile"))
    }
    return {
        "threads": len(tasks),
        "engine_search_threads": sum(
            (task / "comm").read_text().startswith("edge-search") for task in tasks
        ),
        "maps": len(Path("/proc/self/maps").read_text().splitlines()),
        "rss_mib": status["VmRSS"],
        "rss_anon_mib": status["RssAnon"],
        "rss_file_mib": status["RssFile"],
    }


def store_at(path: Path, max_open: int | None) -> QdrantStore:
    """A store under `path`, keeping `max_open` collections open where the store can be told."""
    if max_open is not None and "max_open_collections" in inspect.signature(QdrantStore).parameters:
        return QdrantStore(path=path, max_open_collections=max_open)  # type: ignore[call-arg]
    return QdrantStore(path=path)


async def search_each(store: QdrantStore, count: int) -> dict[str, Any]:
    """One search per collection, in order; its mean time and the process after it."""
    query = [1.0] + [0.0] * (DIMENSIONS - 1)
    started = time.perf_counter()
    for n in range(count):
        try:
            await store.search(f"kb_{n}", query, 5)
        except Exception as error:  # the engine's own errors, such as running out of maps
            return {"failed_at": n, "error": str(error)[:200], **process()}
    return {
        "search_each_ms": round(1000 * (time.perf_counter() - started) / count, 2),
        **process(),
    }


async def run(count: int, max_open: int | None) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="bench-open-collections-"))
    try:
        async with store_at(root, max_open) as store:
            for n in range(count):
                try:
                    await store.create_collection(f"kb_{n}", DIMENSIONS)
                    await store.insert(f"kb_{n}", [record(f"doc{n}", i) for i in range(10)])
                except Exception as error:  # the engine's own errors, as in search_each
                    return {"writing": {"failed_at": n, "error": str(error)[:200], **process()}}
            written = process()
        async with store_at(root, max_open) as store:
            first = await search_each(store, count)
            second = await search_each(store, count) if "failed_at" not in first else None
        return {"writing": written, "first_pass": first, "second_pass": second}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", type=int, default=300)
    parser.add_argument(
        "--max-open", type=int, default=None, help="the store's max_open_collections"
    )
    parser.add_argument("--name", default="open_collections")
    args = parser.parse_args(argv)
    result = {
        "collections": args.collections,
        "max_open_collections": args.max_open,
        "max_map_count": int(Path("/proc/sys/vm/max_map_count").read_text()),
        "cores": os.cpu_count(),
        **asyncio.run(run(args.collections, args.max_open)),
    }
    print(result)
    print("wrote", write_result(args.name, result))


if __name__ == "__main__":
    main()
