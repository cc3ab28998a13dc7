"""`QdrantEngine`: the engine of `QdrantStore` over a `QdrantBackend` (Qdrant Edge or a
server): opening it, its collections, writing points with their BM25 vectors and deleting;
its reads are `QdrantReading`'s."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager

from archivist._util.off_loop import off_loop
from archivist.rag.store.core.bm25 import TermCounts
from archivist.rag.store.core.distance import check_distance
from archivist.rag.store.core.engine import CollectionShape, missing_collection
from archivist.rag.store.core.layout import DOCUMENT_ID, GENERATION, TERM_LENGTH
from archivist.rag.store.core.points import PointWrite, with_sparse
from archivist.rag.store.core.terms import TERM_LAYOUT
from archivist.rag.store.keyed_lock import KeyedLocks
from archivist.rag.store.qdrant.backend import (
    INTERNAL_INDEXES,
    QdrantBackend,
)
from archivist.rag.store.qdrant.filter import Match, Where, index_kind, metadata_matches
from archivist.rag.store.qdrant.reading import QdrantReading
from archivist.validation import MetadataFilter

__all__ = ["QdrantEngine"]


class QdrantEngine(QdrantReading):
    """The engine of a `QdrantStore` (see it for what each argument means) over `backend`."""

    WRITE_BATCH = 64
    """Points per engine write: bounds how long one write keeps the event loop."""

    def __init__(self, distance: str, backend: QdrantBackend) -> None:
        self._distance = check_distance(distance)
        self.backend = backend
        self._is_open = False
        self._params: dict[str, CollectionShape] = {}
        self._document_locks = KeyedLocks()
        self._stats_locks = KeyedLocks()

    async def open(self) -> None:
        if self._is_open:
            raise RuntimeError("QdrantStore is already open")
        self._params.clear()
        await self.backend.open()
        self._is_open = True

    async def close(self) -> None:
        """Close the backend (Edge shards, or the client's connections)."""
        if self._is_open:
            self._is_open = False
            self._params.clear()
            await self.backend.close()

    def check_open(self) -> None:
        self._open()

    def _open(self) -> QdrantBackend:
        if not self._is_open:
            raise RuntimeError("QdrantStore is not open: use it inside `async with store:`")
        return self.backend

    async def shape(self, name: str, *, fresh: bool = False) -> CollectionShape | None:
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

    async def create_collection(self, name: str, dimensions: int, sparse: bool) -> CollectionShape:
        """A new collection unless one exists (made meanwhile by another client of the same
        server, perhaps)."""
        backend = self._open()
        existing = await self.shape(name)
        if existing is not None:
            return existing
        params = CollectionShape(dimensions, self._distance, sparse, TERM_LAYOUT)
        try:
            await backend.create_collection(name, params)
        except Exception:
            existing = await self.shape(name)
            if existing is None:
                raise
            return existing
        self._params[name] = params
        return params

    async def delete_collection(self, name: str) -> None:
        backend = self._open()
        self._params.pop(name, None)
        if await backend.collection_params(name) is not None:
            await backend.delete_collection(name)

    async def optimize(self, collection: str) -> None:
        """Build the vector index of every segment that filled up (Edge only); a remainder
        smaller than a segment stays searched exactly."""
        if await self.shape(collection) is None:
            raise missing_collection(collection)
        await self._open().optimize(collection)

    async def scope(self, collection: str, metadata_filter: MetadataFilter | None) -> Where:
        """`metadata_filter` as a condition, with a payload index made (once) for every key it
        matches by value."""
        matches = metadata_matches(metadata_filter)
        kinds = {m.key: index_kind(m.value) for m in matches if isinstance(m, Match)}
        await self._open().ensure_indexes(collection, kinds)
        return Where(matches)

    async def write(
        self,
        collection: str,
        shape: CollectionShape,
        points: list[PointWrite],
        counts: Sequence[TermCounts | None],
        *,
        overwrites: bool = True,
    ) -> None:
        """Upsert `points`, `WRITE_BATCH` at a time, with the BM25 vector of each text chunk
        when the collection has them.

        Term weights use the collection's running average chunk length, this write included
        (and the chunks it overwrites counted out).
        """
        if shape.sparse:
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

    async def remove(
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
            async for page in backend.scroll(collection, where, (TERM_LENGTH,), self.SCROLL_PAGE):
                lengths.extend(int(item.get(TERM_LENGTH) or 0) for item in page)
            await backend.delete(collection, where)
            if any(lengths):
                stats = await backend.bm25_stats(collection)
                stats.remove(lengths)
                await backend.save_bm25_stats(collection, stats)

    def document_lock(
        self, collection: str, document_id: str
    ) -> AbstractAsyncContextManager[object]:
        return self._document_locks.hold((collection, document_id))
