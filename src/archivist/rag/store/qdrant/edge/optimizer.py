"""Builds an Edge collection's HNSW index in a child process, off this process's event loop.

qdrant-edge-py holds the GIL for the whole of `EdgeShard.optimize()` (minutes at 100k x 384 on
two cores), so neither the event loop nor a worker thread could run meanwhile. The child works on
a copy of the shard; reads go on against the live shard, writes go on and are recorded, then the
optimized copy (with the recorded writes replayed) replaces the live shard in one step.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import uuid
from pathlib import Path

from archivist.rag.store.qdrant.edge.collection import SHARD_PREFIX, EdgeCollection

_CHILD = """\
import os, sys
from qdrant_edge import EdgeShard
try:
    os.nice(10)
except OSError:
    pass
shard = EdgeShard.load(sys.argv[1])
shard.optimize()
shard.flush()
shard.close()
"""


async def optimize_collection(collection: EdgeCollection) -> None:
    """Index what `collection` holds unindexed; the collection stays readable and writable."""
    work = collection.directory / f"{SHARD_PREFIX}{uuid.uuid4().hex}"
    replaced: Path | None = None
    try:
        async with collection.write_lock:
            collection.shard.flush()
            await asyncio.to_thread(shutil.copytree, collection.shard_dir, work)
            collection.start_recording()
        await _run_child(work)
        async with collection.write_lock:
            replaced = collection.swap_in(work)
    finally:
        collection.stop_recording()
        shutil.rmtree(work if replaced is None else replaced, ignore_errors=True)
    collection.unindexed_baseline = collection.unindexed()


async def _run_child(shard_dir: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _CHILD,
        str(shard_dir),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, errors = await process.communicate()
    except BaseException:
        if process.returncode is None:
            process.kill()
            await process.wait()
        raise
    if process.returncode != 0:
        message = errors.decode(errors="replace").strip()[-2000:]
        raise RuntimeError(
            f"building the vector index failed (exit {process.returncode}): {message}"
        )
