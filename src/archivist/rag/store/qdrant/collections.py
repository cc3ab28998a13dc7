"""What `QdrantStore` is built on: opening an engine, its collections, and writing to them
(one write of points with their BM25 vectors, crash-safe replace, delete)."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Self

from archivist._util.off_loop import off_loop
from archivist.rag.record import VectorRecord
from archivist.rag.store.core.distance import check_distance
from archivist.rag.store.core.layout import DOCUMENT_ID, GENERATION, TERM_LENGTH
from archivist.rag.store.core.points import PointWrite, term_counts, with_sparse
from archivist.rag.store.core.shaped import CollectionShape
from archivist.rag.store.core.store import CoreStore
from archivist.rag.store.core.terms import TERM_LAYOUT
from archivist.rag.store.keyed_lock import KeyedLocks
from archivist.rag.store.qdrant.backend import (
    INTERNAL_INDEXES,
    QdrantBackend,
    Quantization,
    ScoredPoint,
    VectorDatatype,
)
from archivist.rag.store.qdrant.connect import client_backend, engine_for, store_layout
from archivist.rag.store.qdrant.edge.optimizer import SEGMENT_POINTS
from archivist.rag.store.qdrant.filter import Match, Where, index_kind, metadata_matches
from archivist.validation import MetadataFilter, check_collection_name

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient

__all__ = ["QdrantCollections"]

DEFAULT_QUANTIZATION: Quantization | None = "int8"
"""New collections quantize their vectors unless told otherwise (see `QdrantStore`): on SciFact
it cost 0.0005 nDCG@10, and it keeps a million 384-d vectors in 0.4 GB of RAM, not 1.5 GB."""
DEFAULT_VECTOR_DATATYPE: VectorDatatype = "float16"
"""New collections store their dense vectors as float16 unless told otherwise: half the memory
of float32, and cosine similarities that differ by about 1e-3."""
SCROLL_PAGE = 1024
"""Payloads read per page when a delete counts its chunks' BM25 lengths out."""
TENANT_PAYLOAD_KEY = "tenant_id"
"""The metadata key tenants are told apart by (`archivist.rag.store.tenant.TENANT_KEY`)."""


class QdrantCollections(CoreStore[CollectionShape, Where, ScoredPoint]):
    """The engine, the collections and the writes of a `QdrantStore` (see it for what each
    argument means); searching and reading are `QdrantStore`'s."""

    WRITE_BATCH = 64
    """Points per engine write: bounds how long one write keeps the event loop."""

    def __init__(
        self,
        location: str | None = None,
        url: str | None = None,
        path: str | os.PathLike[str] | None = None,
        api_key: str | None = None,
        distance: str = "Cosine",
        client_kwargs: Mapping[str, Any] | None = None,
        *,
        auto_optimize_threshold: int | None = SEGMENT_POINTS,
        quantization: Quantization | None = DEFAULT_QUANTIZATION,
        vector_datatype: VectorDatatype = DEFAULT_VECTOR_DATATYPE,
        tenant_key: str | None = TENANT_PAYLOAD_KEY,
        tenants_only: bool = False,
        search_threads: int | None = None,
        max_open_collections: int | None = None,
    ) -> None:
        layout = store_layout(quantization, vector_datatype, tenant_key, tenants_only)
        engine = engine_for(
            location,
            url,
            path,
            api_key,
            client_kwargs,
            auto_optimize_threshold,
            layout,
            search_threads,
            max_open_collections,
        )
        self._setup(distance, engine)

    @classmethod
    def from_client(
        cls,
        client: AsyncQdrantClient,
        distance: str = "Cosine",
        *,
        quantization: Quantization | None = DEFAULT_QUANTIZATION,
        vector_datatype: VectorDatatype = DEFAULT_VECTOR_DATATYPE,
        tenant_key: str | None = TENANT_PAYLOAD_KEY,
        tenants_only: bool = False,
    ) -> Self:
        """A store on `client`, which stays yours: leaving `async with store` does not close it."""
        store = cls.__new__(cls)
        layout = store_layout(quantization, vector_datatype, tenant_key, tenants_only)
        store._setup(distance, client_backend(lambda: client, layout, owns_client=False))
        return store

    def _setup(self, distance: str, engine: QdrantBackend) -> None:
        CoreStore.__init__(self)
        self._distance = check_distance(distance)
        self._engine = engine
        self._is_open = False
        self._params: dict[str, CollectionShape] = {}
        self._collections_lock = asyncio.Lock()
        self._document_locks = KeyedLocks()
        self._stats_locks = KeyedLocks()

    async def __aenter__(self) -> Self:
        if self._is_open:
            raise RuntimeError("QdrantStore is already open")
        self._params.clear()
        await self._engine.open()
        self._is_open = True
        return self

    async def aclose(self) -> None:
        """Close the engine (Edge shards, or the client's connections); `async with` does."""
        if self._is_open:
            self._is_open = False
            self._params.clear()
            await self._engine.close()

    def _open(self) -> QdrantBackend:
        if not self._is_open:
            raise RuntimeError("QdrantStore is not open: use it inside `async with store:`")
        return self._engine

    async def _shape(self, name: str, *, fresh: bool = False) -> CollectionShape | None:
        """The collection's shape, remembered once read (with its payload indexes made)."""
        if fresh:
            self._params.pop(name, None)
        cached = self._params.get(name)
        if cached is not None:
            return cached
        backend = self._open()
        params = await backend.collection_params(name)
        if params is not None:
            await backend.ensure_indexes(name, INTERNAL_INDEXES)
            self._params[name] = params
        return params

    async def create_collection(self, name: str, dimensions: int, *, sparse: bool = True) -> None:
        """Create collection `name` for `dimensions`-d vectors, with BM25 vectors for hybrid
        search unless `sparse` is False; a no-op if it exists with the same dimensions."""
        self._check_new_collection(name, dimensions, sparse)
        backend = self._open()
        async with self._collections_lock:
            existing = await self._shape(name)
            if existing is None:
                params = CollectionShape(dimensions, self._distance, sparse, TERM_LAYOUT)
                try:
                    await backend.create_collection(name, params)
                except Exception:
                    # Another client of the same server may have created it meanwhile.
                    existing = await self._shape(name)
                    if existing is None:
                        raise
                else:
                    self._params[name] = params
                    return
            self._check_same_dimensions(name, existing, dimensions)

    async def delete_collection(self, name: str) -> None:
        check_collection_name(name)
        backend = self._open()
        async with self._collections_lock:
            self._params.pop(name, None)
            if await backend.collection_params(name) is not None:
                await backend.delete_collection(name)

    async def optimize(self, collection: str) -> None:
        """Build the vector index of every segment that filled up (Edge only); a remainder
        smaller than a segment stays searched exactly."""
        check_collection_name(collection)
        await self._require(collection)
        await self._open().optimize(collection)

    async def _scope(self, collection: str, metadata_filter: MetadataFilter | None) -> Where:
        """`metadata_filter` as a condition, with a payload index made (once) for every key it
        matches by value."""
        matches = metadata_matches(metadata_filter)
        kinds = {m.key: index_kind(m.value) for m in matches if isinstance(m, Match)}
        await self._open().ensure_indexes(collection, kinds)
        return Where(matches)

    async def _write(
        self,
        collection: str,
        shape: CollectionShape,
        records: Sequence[VectorRecord],
        points: list[PointWrite],
        *,
        overwrites: bool = True,
    ) -> None:
        """Upsert `points`, `WRITE_BATCH` at a time, with the BM25 vector of each text chunk
        when the collection has them.

        Term counting is Python per chunk: it runs off the loop (`off_loop`). Term weights use
        the collection's running average chunk length, this write included (and the chunks it
        overwrites counted out).
        """
        if shape.sparse:
            counts = await off_loop(
                functools.partial(term_counts, self._encoder(shape), records), len(records)
            )
            counted = [terms for terms in counts if terms is not None and terms.length]
            if counted:
                backend = self._open()
                async with self._stats_locks.hold(collection):
                    # A point written again (an insert of a chunk already stored) is counted
                    # out before it is counted in.
                    stats = await backend.bm25_stats(collection)
                    if overwrites:
                        ids = [point.id for point in points]
                        stored = await backend.retrieve(collection, ids)
                        stats.remove([int(item.get(TERM_LENGTH) or 0) for item in stored.values()])
                    average = stats.average_after(counted)
                    stats.add(counted)
                    await backend.save_bm25_stats(collection, stats)
                points = await off_loop(
                    functools.partial(with_sparse, points, counts, average), len(points)
                )
        backend = self._open()
        for start in range(0, len(points), self.WRITE_BATCH):
            await backend.upsert(collection, points[start : start + self.WRITE_BATCH])

    async def _remove(
        self,
        collection: str,
        shape: CollectionShape,
        scope: Where | None,
        document_id: str | None,
        *,
        generation: str | None = None,
        keep: str | None = None,
    ) -> None:
        where = scope or Where()
        if document_id is not None:
            where = where.also(Match(DOCUMENT_ID, document_id))
        if generation is not None:
            where = where.also(Match(GENERATION, generation))
        if keep is not None:
            where = Where(where.must, (*where.must_not, Match(GENERATION, keep)))
        backend = self._open()
        if not shape.sparse:
            await backend.delete(collection, where)
            return
        # The BM25 totals are those of the chunks stored: the lengths of the doomed chunks
        # are read and counted out with the delete, under the lock writes count in with.
        async with self._stats_locks.hold(collection):
            lengths: list[int] = []
            async for page in backend.scroll(collection, where, (TERM_LENGTH,), SCROLL_PAGE):
                lengths.extend(int(item.get(TERM_LENGTH) or 0) for item in page)
            await backend.delete(collection, where)
            if any(lengths):
                stats = await backend.bm25_stats(collection)
                stats.remove(lengths)
                await backend.save_bm25_stats(collection, stats)

    def _document_lock(
        self, collection: str, document_id: str
    ) -> AbstractAsyncContextManager[object]:
        return self._document_locks.hold((collection, document_id))
