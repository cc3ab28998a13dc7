"""One Qdrant Edge collection: its shard (opened on first use), its meta file, its writes."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import qdrant_edge as edge

from archivist.rag.store.qdrant.edge.meta import EdgeMeta, save_meta
from archivist.rag.store.qdrant.edge.translate import edge_schema
from archivist.rag.store.qdrant.filter import IndexKind
from archivist.rag.store.qdrant.sparse import SPARSE_VECTOR

SHARD_PREFIX = "shard-"


class EdgeCollection:
    """A collection directory holding `meta.json` and the live shard directory it names.

    While an optimization runs on a copy of the shard, every write applied here is also recorded,
    so that it can be replayed on the optimized copy before that copy replaces the shard.
    """

    def __init__(self, directory: Path, meta: EdgeMeta, shard: edge.EdgeShard | None = None):
        self.directory = directory
        self.meta = meta
        self._shard = shard
        self.write_lock = asyncio.Lock()
        """Held around every write, and by an optimization while it copies and swaps the shard."""
        self.optimization: asyncio.Task[None] | None = None
        self.unindexed_baseline = 0
        """Points left unindexed by the last optimization (too small a segment to index)."""
        self.recording_done = asyncio.Event()
        self.recording_done.set()
        self._recorded: list[edge.UpdateOperation] | None = None
        self.recorded_points = 0

    @property
    def shard_dir(self) -> Path:
        """The live shard's directory."""
        return self.directory / self.meta.shard

    @property
    def shard(self) -> edge.EdgeShard:
        """The live shard, loaded on first use."""
        if self._shard is None:
            self._remove_stale_shards()
            self._shard = edge.EdgeShard.load(str(self.shard_dir))
        return self._shard

    def _remove_stale_shards(self) -> None:
        # Left behind by an optimization that a crash interrupted.
        for entry in self.directory.glob(f"{SHARD_PREFIX}*"):
            if entry.name != self.meta.shard:
                shutil.rmtree(entry, ignore_errors=True)

    def apply(self, operation: edge.UpdateOperation, points: int = 0) -> None:
        """Apply a write of `points` points (call with `write_lock` held)."""
        self.shard.update(operation)
        if self._recorded is not None:
            self._recorded.append(operation)
            self.recorded_points += points

    def add_index(self, path: str, kind: IndexKind) -> None:
        """Create a payload index on `path` unless one exists (call with `write_lock` held)."""
        if path in self.meta.indexes:
            return
        self.apply(edge.UpdateOperation.create_field_index(path, edge_schema(kind)))
        self.meta.indexes[path] = kind
        save_meta(self.directory, self.meta)

    def unindexed(self) -> int:
        """How many points sit in segments without a dense vector index.

        The engine's indexed count includes sparse vectors, which are always indexed.
        """
        info = self.shard.info()
        indexed = info.indexed_vectors_count
        if self.meta.sparse:
            has_sparse = edge.Filter(must=[edge.HasVectorCondition(SPARSE_VECTOR)])
            indexed -= self.shard.count(edge.CountRequest(exact=True, filter=has_sparse))
        return max(0, info.points_count - indexed)

    def start_recording(self) -> None:
        """Record writes from now on (the shard was just copied)."""
        self._recorded = []
        self.recorded_points = 0
        self.recording_done.clear()

    def stop_recording(self) -> None:
        """Forget recorded writes and wake writers waiting for room."""
        self._recorded = None
        self.recorded_points = 0
        self.recording_done.set()

    def swap_in(self, optimized: Path) -> Path:
        """Make the shard at `optimized` live after replaying the recorded writes on it.

        Returns the directory of the replaced shard. Runs without awaiting, so no read or write
        of this event loop sees a half-swapped collection. Call with `write_lock` held.
        """
        replacement = edge.EdgeShard.load(str(optimized))
        try:
            for operation in self._recorded or []:
                replacement.update(operation)
            replacement.flush()
        except BaseException:
            replacement.close()
            raise
        previous_dir = self.shard_dir
        previous = self._shard
        self._shard = replacement
        self.meta.shard = optimized.name
        save_meta(self.directory, self.meta)
        self.stop_recording()
        if previous is not None:
            previous.close()
        return previous_dir

    def close(self) -> None:
        """Flush and close the shard if it is open."""
        if self._shard is not None:
            shard, self._shard = self._shard, None
            try:
                shard.flush()
            finally:
                shard.close()
