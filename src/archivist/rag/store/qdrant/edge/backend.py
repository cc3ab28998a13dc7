"""QdrantBackend on Qdrant Edge: one in-process shard per collection, under a directory.

qdrant-edge-py holds the GIL for the whole of every call, so a worker thread would not let the
loop run during one; most calls run inline, and long work is cut into bounded steps instead:
writes arrive in batches, scrolls go page by page, and an optimization indexes one new segment
of bounded size (see optimizer.py). A write's batch goes to a worker thread all the same:
building its points is Python work as long as the engine's part, which the loop then
interleaves with its requests.
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import tempfile
import uuid
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as edge

from archivist.errors import InvalidArgumentError
from archivist.rag.store.core.bm25 import Bm25Stats, SparseVector
from archivist.rag.store.core.engine import CollectionShape
from archivist.rag.store.core.points import PointWrite
from archivist.rag.store.file_lock import StoreLock
from archivist.rag.store.qdrant.backend import (
    INTERNAL_INDEXES,
    RESCORE_OVERSAMPLING,
    SPARSE_VECTOR,
    QdrantBackend,
    ScoredPoint,
    SearchRequest,
    StoreLayout,
    idf_from_hit,
    scored_points,
)
from archivist.rag.store.qdrant.edge.collection import SHARD_PREFIX, EdgeCollection, edge_config
from archivist.rag.store.qdrant.edge.meta import META_FILE, EdgeMeta, load_meta, save_meta
from archivist.rag.store.qdrant.edge.open_shards import OpenShards
from archivist.rag.store.qdrant.edge.term_cache import TermIdfCache
from archivist.rag.store.qdrant.edge.translate import edge_filter, edge_schema
from archivist.rag.store.qdrant.filter import IndexKind, Where


class EdgeBackend(QdrantBackend):
    """Edge shards under `path/collections/<name>/` (a temporary directory if `path` is None).

    A `path` is held with an exclusive StoreLock while open. A temporary directory outlives
    close() so the data is still there when the backend is opened again; it is removed when the
    backend is garbage-collected or the interpreter exits. Each collection's points are indexed
    in segments of `segment_points`; with `auto_optimize` a write that fills a segment indexes it
    at once (otherwise only `optimize` does). Each shard searches on `search_threads` threads;
    at most `max_open_collections` shards stay open, the least recently used closed past that
    (see open_shards.py). New collections take `layout`'s quantization and vector datatype.
    """

    def __init__(
        self,
        path: Path | None,
        segment_points: int,
        auto_optimize: bool,
        layout: StoreLayout,
        search_threads: int,
        max_open_collections: int,
    ) -> None:
        self._path = path
        self._layout = layout
        self._segment_points = segment_points
        self._search_threads = search_threads
        self._open_shards = OpenShards(max_open_collections)
        self._auto_optimize = auto_optimize
        self._root: Path | None = None
        self._temporary: Path | None = None
        self._lock: StoreLock | None = None
        self._collections: dict[str, EdgeCollection] = {}
        self._term_idf = TermIdfCache()

    @property
    def _collections_dir(self) -> Path:
        assert self._root is not None
        return self._root / "collections"

    async def open(self) -> None:
        if self._path is None:
            if self._temporary is None:
                self._temporary = Path(tempfile.mkdtemp(prefix="archivist-qdrant-edge-"))
                weakref.finalize(self, shutil.rmtree, self._temporary, ignore_errors=True)
            self._root = self._temporary
        else:
            self._path.mkdir(parents=True, exist_ok=True)
            lock = StoreLock(self._path)
            lock.acquire()
            self._lock, self._root = lock, self._path
        try:
            self._collections_dir.mkdir(exist_ok=True)
            for directory in sorted(self._collections_dir.iterdir()):
                meta = load_meta(directory) if directory.is_dir() else None
                if meta is not None:
                    self._collections[directory.name] = EdgeCollection(
                        directory, meta, self._segment_points, self._search_threads
                    )
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        try:
            for collection in self._collections.values():
                collection.close()
        finally:
            self._collections.clear()
            self._open_shards.clear()
            if self._lock is not None:
                self._lock.release()
                self._lock = None
            self._root = None

    def _get(self, name: str) -> EdgeCollection:
        """The collection `name`, about to be used: it counts as the most recently used."""
        try:
            collection = self._collections[name]
        except KeyError:
            raise InvalidArgumentError(
                f"collection {name!r} does not exist", argument="collection"
            ) from None
        self._open_shards.use(name, collection)
        return collection

    async def collection_params(self, name: str) -> CollectionShape | None:
        collection = self._collections.get(name)
        if collection is None:
            return None
        meta = collection.meta
        return CollectionShape(meta.dimensions, meta.distance, meta.sparse, meta.term_layout)

    async def create_collection(self, name: str, params: CollectionShape) -> None:
        directory = self._collections_dir / name
        if directory.exists():
            shutil.rmtree(directory)  # an earlier creation that never wrote its meta file
        directory.mkdir()
        shard_name = f"{SHARD_PREFIX}{uuid.uuid4().hex}"
        meta = EdgeMeta(
            params.dimensions,
            params.distance,
            shard_name,
            sparse=params.sparse,
            quantized=self._layout.quantization == "int8",
            datatype=self._layout.vector_datatype,
            term_layout=params.term_layout,
        )
        # A temporary store need not survive a crash; without the WAL, writes go ~2x faster.
        config = edge_config(
            meta, self._segment_points, self._search_threads, wal=self._path is not None
        )
        shard = edge.EdgeShard.create(str(directory / shard_name), config)
        collection = EdgeCollection(
            directory, meta, self._segment_points, self._search_threads, shard
        )
        for path, kind in INTERNAL_INDEXES.items():
            collection.apply(edge.UpdateOperation.create_field_index(path, edge_schema(kind)))
            meta.indexes[path] = kind
        shard.flush()
        save_meta(directory, meta)
        self._collections[name] = collection
        self._open_shards.use(name, collection)

    async def delete_collection(self, name: str) -> None:
        collection = self._collections.pop(name)
        self._open_shards.forget(name)
        collection.close()
        (collection.directory / META_FILE).unlink(missing_ok=True)
        await asyncio.to_thread(shutil.rmtree, collection.directory, True)

    async def ensure_indexes(self, name: str, indexes: Mapping[str, IndexKind]) -> None:
        collection = self._get(name)
        for path, kind in indexes.items():
            collection.add_index(path, kind)

    async def upsert(self, name: str, points: Sequence[PointWrite]) -> None:
        collection = self._get(name)
        collection.busy += 1
        try:
            await _finished_in_thread(functools.partial(_write_points, collection, points))
        finally:
            collection.busy -= 1
        if self._auto_optimize:
            collection.optimize()  # a fraction of a millisecond unless a segment filled up

    async def delete(self, name: str, where: Where) -> None:
        condition = edge_filter(where)
        if condition is None:
            raise ValueError("refusing to delete without a condition")
        collection = self._get(name)
        collection.apply(edge.UpdateOperation.delete_points_by_filter(condition))
        if self._auto_optimize:
            collection.optimize()  # vacuums a segment once enough of it was deleted

    async def search(self, name: str, request: SearchRequest) -> list[ScoredPoint]:
        return scored_points(self._get(name).shard.query(_query_request(request)))

    async def search_batch(
        self, name: str, requests: Sequence[SearchRequest]
    ) -> list[list[ScoredPoint]]:
        batch = edge.QueryBatchRequest([_query_request(request) for request in requests])
        return [scored_points(points) for points in self._get(name).shard.query_batch(batch)]

    async def retrieve(self, name: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        records = self._get(name).shard.retrieve(list(ids), True, False)
        return {str(record.id): record.payload or {} for record in records}

    async def stored_vectors(
        self, name: str, ids: Sequence[str], vectors: tuple[str, ...]
    ) -> dict[str, ScoredPoint]:
        records = self._get(name).shard.retrieve(list(ids), False, list(vectors) or False)
        return {str(r.id): ScoredPoint.of(r.id, 0.0, None, r.vector) for r in records}

    async def term_idf(self, name: str, where: Where, terms: Sequence[int]) -> dict[int, float]:
        collection = self._get(name)
        version = collection.version  # read before the engine, so a write meanwhile shows
        idf = self._term_idf.known(version, where, terms)
        missing = [term for term in terms if term not in idf]
        if missing:
            condition = edge_filter(where)
            batch = edge.QueryBatchRequest(
                [
                    edge.QueryRequest(
                        limit=1,
                        query=edge.Query.Nearest(
                            _sparse(SparseVector([term], [1.0])), using=SPARSE_VECTOR
                        ),
                        filter=condition,
                        with_vector=[SPARSE_VECTOR],
                    )
                    for term in missing
                ]
            )
            found = collection.shard.query_batch(batch)
            read: dict[int, float | None] = {
                term: idf_from_hit(term, points[0].score, points[0].vector) if points else None
                for term, points in zip(missing, found, strict=True)
            }
            self._term_idf.remember(version, where, read)
            idf.update(read)
        return {term: value for term in terms if (value := idf[term]) is not None}

    async def bm25_stats(self, name: str) -> Bm25Stats:
        meta = self._get(name).meta
        return Bm25Stats(meta.bm25_tokens, meta.bm25_chunks)

    async def save_bm25_stats(self, name: str, stats: Bm25Stats) -> None:
        self._get(name).set_bm25_stats(stats.tokens, stats.chunks)

    async def count(self, name: str, where: Where) -> int:
        return self._get(name).shard.count(edge.CountRequest(exact=True, filter=edge_filter(where)))

    async def facet(self, name: str, key: str, where: Where, limit: int) -> dict[str, int]:
        request = edge.FacetRequest(key=key, limit=limit, exact=True, filter=edge_filter(where))
        hits = self._get(name).shard.facet(request).hits
        # The facet index may still list values whose points were all deleted, with count 0.
        return {str(hit.value): hit.count for hit in hits if hit.count > 0}

    async def scroll(
        self, name: str, where: Where, fields: Sequence[str], page_size: int
    ) -> AsyncIterator[list[dict[str, Any]]]:
        offset: edge.PointId | None = None
        while True:
            request = edge.ScrollRequest(
                offset=offset,
                limit=page_size,
                filter=edge_filter(where),
                with_payload=edge.PayloadSelector.Include(list(fields)),
                with_vector=False,
            )
            records, offset = self._get(name).shard.scroll(request)
            yield [record.payload or {} for record in records]
            if offset is None:
                return
            await asyncio.sleep(0)

    async def scroll_ordered(
        self, name: str, where: Where, order_key: str, limit: int
    ) -> list[dict[str, Any]]:
        request = edge.ScrollRequest(
            limit=limit,
            filter=edge_filter(where),
            with_payload=True,
            with_vector=False,
            order_by=edge.OrderBy(order_key, edge.Direction.Asc),
        )
        records, _ = self._get(name).shard.scroll(request)
        return [record.payload or {} for record in records]

    async def optimize(self, name: str) -> None:
        self._get(name).optimize()


_RESCORED = edge.SearchParams(
    quantization=edge.QuantizationSearchParams(rescore=True, oversampling=RESCORE_OVERSAMPLING)
)
"""Dense search parameters: see `RESCORE_OVERSAMPLING` (ignored where nothing is quantized)."""
_INT8_ONLY = edge.SearchParams(quantization=edge.QuantizationSearchParams(rescore=False))
"""Dense search parameters of a list ranked by the int8 copies alone (`SearchRequest.rescore`)."""


def _query_request(request: SearchRequest) -> edge.QueryRequest:
    """The engine's request for one list (see `SearchRequest`)."""
    condition = edge_filter(request.where)
    sides = []
    if request.dense is not None:
        sides.append(edge.Query.Nearest(request.dense))
    if request.sparse is not None:
        sides.append(edge.Query.Nearest(_sparse(request.sparse), using=SPARSE_VECTOR))
    final: edge.Query | edge.Mmr = sides[0]
    prefetches = None
    if request.diversity is not None and request.dense is not None:
        # Edge's MMR lambda weighs relevance; Qdrant's diversity weighs dissimilarity.
        final = edge.Mmr(request.dense, 1.0 - request.diversity, request.depth)
        if len(sides) > 1:
            prefetches = [
                edge.Prefetch(
                    limit=request.depth,
                    query=side,
                    filter=condition,
                    params=_RESCORED if side is sides[0] else None,
                )
                for side in sides
            ]
    elif len(sides) > 1:
        raise ValueError("a search request ranks by one side, or picks from both by MMR")
    return edge.QueryRequest(
        limit=request.limit,
        query=final,
        prefetches=prefetches,
        filter=condition,
        with_payload=request.payload,
        with_vector=list(request.vectors) or False,
        params=None if request.dense is None else _RESCORED if request.rescore else _INT8_ONLY,
    )


def _write_points(collection: EdgeCollection, points: Sequence[PointWrite]) -> None:
    collection.apply(
        edge.UpdateOperation.upsert_points(
            [edge.Point(point.id, _vectors(point), point.payload) for point in points]
        )
    )


async def _finished_in_thread(work: Callable[[], None]) -> None:
    """`work()` in a worker thread. A cancelled caller still waits for it to end, so a write
    it gave up on has landed or failed before the caller's clean-up deletes what it wrote."""
    future = asyncio.ensure_future(asyncio.to_thread(work))
    try:
        await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait([future])
        if not future.cancelled():
            future.exception()  # retrieved: the cancellation is what the caller sees
        raise


def _sparse(vector: SparseVector) -> edge.SparseVector:
    return edge.SparseVector(indices=vector.indices, values=vector.values)


def _vectors(
    point: PointWrite,
) -> list[float] | dict[str, list[float] | edge.SparseVector | list[list[float]]]:
    """The point's dense vector, with its BM25 vector beside it when it has one."""
    if point.sparse is None:
        return point.vector
    return {"": point.vector, SPARSE_VECTOR: _sparse(point.sparse)}
