"""One Qdrant Edge collection: its shard (opened on first use), its meta file, its writes."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import qdrant_edge as edge

from archivist.rag.store.qdrant.backend import SPARSE_VECTOR
from archivist.rag.store.qdrant.edge.meta import EdgeMeta, save_meta
from archivist.rag.store.qdrant.edge.optimizer import optimizers_config
from archivist.rag.store.qdrant.edge.translate import edge_distance, edge_schema
from archivist.rag.store.qdrant.filter import IndexKind

SHARD_PREFIX = "shard-"

_DATATYPES = {
    "float32": edge.VectorStorageDatatype.Float32,
    "float16": edge.VectorStorageDatatype.Float16,
}

_VERSIONS = itertools.count()
"""Versions for every collection of the process: no two collection states share one."""


SEARCH_THREADS = 1
"""Engine threads per shard that search its segments in parallel, unless the store is told
otherwise. The engine's default is four per core for every open shard: a service holding many
knowledge bases would start thousands, and under concurrent searches, which already keep the
cores busy, waking a pool for each one costs more CPU than its parallelism saves. One thread
searches a collection's segments one after another."""


def edge_config(
    meta: EdgeMeta, segment_points: int, search_threads: int, wal: bool | None = None
) -> edge.EdgeConfig:
    """The shard configuration of the collection `meta` describes, with segments of
    `segment_points` points, searched on `search_threads` threads (`wal` None: as the shard
    was created).

    A quantized collection keeps int8 copies of its dense vectors in RAM for the graph search
    and the originals (float32 or float16, `meta.datatype`) on disk, read back to rescore the
    best candidates. The BM25 index of an indexed segment is memory-mapped rather than held
    in RAM (a chunk's terms would otherwise cost RAM for as long as it is stored); its pages
    stay cached while searches use them.
    """
    return edge.EdgeConfig(
        vectors=edge.EdgeVectorParams(
            size=meta.dimensions,
            distance=edge_distance(meta.distance),
            on_disk=True if meta.quantized else None,
            datatype=_DATATYPES[meta.datatype],
        ),
        quantization_config=(
            edge.ScalarQuantizationConfig(type=edge.ScalarType.Int8, quantile=0.99, always_ram=True)
            if meta.quantized
            else None
        ),
        sparse_vectors=(
            {SPARSE_VECTOR: edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf, on_disk=True)}
            if meta.sparse
            else None
        ),
        optimizers=optimizers_config(meta.dimensions, segment_points, meta.datatype),
        wal_enabled=wal,
        max_search_threads=search_threads,
    )


class EdgeCollection:
    """A collection directory holding `meta.json` and the live shard directory it names.

    `segment_points` sizes the engine's segments (see optimizer.py) and `search_threads` its
    search pool; a shard made with other settings is loaded with these.
    """

    def __init__(
        self,
        directory: Path,
        meta: EdgeMeta,
        segment_points: int,
        search_threads: int,
        shard: edge.EdgeShard | None = None,
    ):
        self.directory = directory
        self.meta = meta
        self.segment_points = segment_points
        self.search_threads = search_threads
        self._shard = shard
        self._unsaved_stats = False
        self.busy = 0
        """Writes in flight on worker threads: while any is, the shard must stay open."""
        self.version = next(_VERSIONS)
        """Changes before and after every write and segment indexing, so whatever was read
        while it stayed the same still holds (`term_cache`)."""

    @property
    def shard_dir(self) -> Path:
        """The live shard's directory."""
        return self.directory / self.meta.shard

    @property
    def shard(self) -> edge.EdgeShard:
        """The live shard, loaded on first use."""
        if self._shard is None:
            self._remove_stale_shards()
            config = edge_config(self.meta, self.segment_points, self.search_threads)
            self._shard = edge.EdgeShard.load(str(self.shard_dir), config)
        return self._shard

    def _remove_stale_shards(self) -> None:
        # Copies left behind by optimizations of earlier versions that a crash interrupted.
        for entry in self.directory.glob(f"{SHARD_PREFIX}*"):
            if entry.name != self.meta.shard:
                shutil.rmtree(entry, ignore_errors=True)

    def apply(self, operation: edge.UpdateOperation) -> None:
        """Apply one write."""
        self.version = next(_VERSIONS)
        try:
            self.shard.update(operation)
        finally:
            self.version = next(_VERSIONS)

    def set_bm25_stats(self, tokens: int, chunks: int) -> None:
        """Record the chunk-length totals; they reach the meta file with the next flush, not
        with an fsync per write.

        They only weigh terms by the average chunk length. After a crash they lag by the
        writes since the last flush (at most a segment's worth), whose points the log
        replays; tokens and chunks lag together, so the average they give stays close.
        """
        self.meta.bm25_tokens, self.meta.bm25_chunks = tokens, chunks
        self._unsaved_stats = True

    def _flush(self, shard: edge.EdgeShard) -> None:
        shard.flush()
        if self._unsaved_stats:
            self._unsaved_stats = False
            try:
                save_meta(self.directory, self.meta)
            except BaseException:
                self._unsaved_stats = True
                raise

    def add_index(self, path: str, kind: IndexKind) -> None:
        """Create a payload index on `path` unless one exists."""
        if path in self.meta.indexes:
            return
        self.apply(edge.UpdateOperation.create_field_index(path, edge_schema(kind)))
        self.meta.indexes[path] = kind
        save_meta(self.directory, self.meta)
        self._unsaved_stats = False

    def optimize(self) -> bool:
        """Index every segment that grew past the segment size; True if one was.

        A shard that indexed a segment is flushed: the engine truncates its write-ahead log
        only on a flush, and the vector pages the writes touched stay resident until then, so
        without it a long-running store's log and memory grow with everything ever written.
        """
        self.version = next(_VERSIONS)
        try:
            indexed = self.shard.optimize()
        finally:
            self.version = next(_VERSIONS)
        if indexed:
            self._flush(self.shard)
        return indexed

    def close(self) -> None:
        """Flush and close the shard if it is open."""
        if self._shard is not None:
            shard, self._shard = self._shard, None
            try:
                self._flush(shard)
            finally:
                shard.close()
