"""A third engine is one small adapter: `CoreStore` over a dense-only engine kept in a dict
passes the conformance suite, with nothing of the core or the other engines changed."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary
from archivist.rag.store.capabilities import StoreCapabilities
from archivist.rag.store.core.arguments import SearchArguments, matches_filter
from archivist.rag.store.core.bm25 import TermCounts
from archivist.rag.store.core.engine import CollectionShape, Engine, missing_collection
from archivist.rag.store.core.generations import GenerationInfo
from archivist.rag.store.core.layout import (
    CHUNK_INDEX,
    DOCUMENT_ID,
    GENERATION,
    METADATA,
    TOTAL_CHUNKS,
    chunk_from,
    summary_from,
)
from archivist.rag.store.core.points import PointWrite
from archivist.rag.store.core.query import Query, Ranked
from archivist.rag.store.core.ranking import Judged, cosine, judge, rank
from archivist.rag.store.core.store import CoreStore
from archivist.rag.store.keyed_lock import KeyedLocks
from archivist.testing.search_store import GroupingTests
from archivist.testing.store import (
    AtomicReplaceTests,
    DeclarationTests,
    GenerationTests,
    RelevanceTests,
    VectorStoreConformance,
)
from archivist.validation import MetadataFilter

ENGINE_MODULE_LINES = 400
"""The most a third engine's adapter may take: the protocol stays small enough for one module."""


class DictEngine:
    """Points in a dict per collection, searched exactly by cosine similarity."""

    def __init__(self) -> None:
        self._open = False
        self._shapes: dict[str, CollectionShape] = {}
        self._points: dict[str, dict[str, PointWrite]] = {}
        self._locks = KeyedLocks()

    async def open(self) -> None:
        if self._open:
            raise RuntimeError("the store is already open")
        self._open = True

    async def close(self) -> None:
        self._open = False

    def check_open(self) -> None:
        if not self._open:
            raise RuntimeError("the store is not open")

    async def shape(self, collection: str, *, fresh: bool = False) -> CollectionShape | None:
        self.check_open()
        return self._shapes.get(collection)

    async def create_collection(
        self, collection: str, dimensions: int, sparse: bool
    ) -> CollectionShape:
        if collection not in self._shapes:
            self._shapes[collection] = CollectionShape(dimensions, "Cosine")
            self._points[collection] = {}
        return self._shapes[collection]

    async def delete_collection(self, collection: str) -> None:
        self._shapes.pop(collection, None)
        self._points.pop(collection, None)

    async def optimize(self, collection: str) -> None:
        if collection not in self._shapes:
            raise missing_collection(collection)

    async def scope(
        self, collection: str, metadata_filter: MetadataFilter | None
    ) -> MetadataFilter | None:
        return metadata_filter

    def _within(
        self, collection: str, scope: MetadataFilter | None, document_id: str | None = None
    ) -> Iterator[PointWrite]:
        for point in list(self._points.get(collection, {}).values()):
            if document_id is not None and point.payload[DOCUMENT_ID] != document_id:
                continue
            if matches_filter(point.payload[METADATA], scope):
                yield point

    async def ranker(
        self,
        collection: str,
        shape: CollectionShape,
        scope: MetadataFilter | None,
        query: Query,
        search: SearchArguments,
        depth: int,
    ) -> Ranked[PointWrite] | None:
        dense = query.dense
        assert dense is not None
        norm = math.hypot(*dense)

        async def ranked(excluded: tuple[str, ...], limit: int) -> list[Judged[PointWrite]]:
            judged = []
            for point in self._within(collection, scope):
                if point.payload[DOCUMENT_ID] not in excluded:
                    similarity = cosine(dense, point.vector, norm)
                    judged.append(
                        judge(point, similarity, similarity, curves=search.relevance_curves)
                    )
            return rank(judged, self.tie_break)[:limit]

        return ranked

    @staticmethod
    def document_of(hit: PointWrite) -> str:
        return str(hit.payload[DOCUMENT_ID])

    @staticmethod
    def tie_break(hit: PointWrite) -> tuple[str, ...]:
        return (hit.id,)

    @staticmethod
    def chunk_of(hit: PointWrite) -> Chunk:
        return chunk_from(hit.payload)

    def _in_order(
        self, collection: str, scope: MetadataFilter | None, document_id: str
    ) -> list[PointWrite]:
        points = self._within(collection, scope, document_id)
        return sorted(points, key=lambda p: (p.payload[CHUNK_INDEX], p.payload[GENERATION]))

    async def summaries(
        self, collection: str, shape: CollectionShape, scope: MetadataFilter | None
    ) -> list[DocumentSummary]:
        documents = sorted({self.document_of(p) for p in self._within(collection, scope)})
        found = [await self.summary(collection, shape, scope, d) for d in documents]
        return [summary for summary in found if summary is not None]

    async def summary(
        self,
        collection: str,
        shape: CollectionShape,
        scope: MetadataFilter | None,
        document_id: str,
    ) -> DocumentSummary | None:
        points = self._in_order(collection, scope, document_id)
        return summary_from(points[0].payload, len(points)) if points else None

    async def chunk_page(
        self,
        collection: str,
        shape: CollectionShape,
        scope: MetadataFilter | None,
        document_id: str,
        offset: int,
        limit: int,
    ) -> list[Chunk]:
        points = self._in_order(collection, scope, document_id)[offset : offset + limit]
        return [chunk_from(point.payload) for point in points]

    async def chunk_range(
        self,
        collection: str,
        shape: CollectionShape,
        scope: MetadataFilter | None,
        document_id: str,
        first: int,
        last: int,
    ) -> list[Chunk]:
        points = self._in_order(collection, scope, document_id)
        return [
            chunk_from(point.payload)
            for point in points
            if first <= point.payload[CHUNK_INDEX] <= last
        ]

    async def generations(
        self,
        collection: str,
        shape: CollectionShape,
        scope: MetadataFilter | None,
        document_id: str | None,
    ) -> list[GenerationInfo]:
        found: dict[tuple[str, str], tuple[list[int], set[int]]] = {}
        for point in self._within(collection, scope, document_id):
            key = (self.document_of(point), str(point.payload[GENERATION]))
            indexes, totals = found.setdefault(key, ([], set()))
            indexes.append(int(point.payload[CHUNK_INDEX]))
            totals.add(int(point.payload[TOTAL_CHUNKS]))
        return [
            GenerationInfo(
                document_id=document,
                generation=generation,
                chunk_indexes=sorted(indexes),
                total_chunks=sorted(totals),
            )
            for (document, generation), (indexes, totals) in sorted(found.items())
        ]

    async def write(
        self,
        collection: str,
        shape: CollectionShape,
        points: list[PointWrite],
        counts: Sequence[TermCounts | None],
        *,
        overwrites: bool = True,
    ) -> None:
        self._points[collection].update((point.id, point) for point in points)

    async def remove(
        self,
        collection: str,
        shape: CollectionShape,
        scope: MetadataFilter | None,
        document_id: str | None,
        *,
        generation: str | None = None,
        keep: str | None = None,
    ) -> None:
        for point in list(self._within(collection, scope, document_id)):
            stored = point.payload[GENERATION]
            if generation not in (None, stored) or keep == stored:
                continue
            del self._points[collection][point.id]

    def document_lock(
        self, collection: str, document_id: str
    ) -> AbstractAsyncContextManager[object]:
        return self._locks.hold((collection, document_id))


class DictStore(CoreStore[CollectionShape, MetadataFilter | None, PointWrite]):
    """The whole store: a constructor and the capabilities the engine offers."""

    capabilities = StoreCapabilities(
        grouping=True,
        relevance=True,
        scoped_delete=True,
        chunk_listing=True,
        atomic_replace=True,
        generations=True,
    )

    def __init__(self) -> None:
        engine: Engine[CollectionShape, MetadataFilter | None, PointWrite] = DictEngine()
        super().__init__(engine)


@pytest.fixture
async def store() -> AsyncIterator[DictStore]:
    async with DictStore() as opened:
        yield opened


class TestDictStore(
    VectorStoreConformance,
    AtomicReplaceTests,
    GenerationTests,
    GroupingTests,
    RelevanceTests,
    DeclarationTests,
):
    """Everything the dict engine's capabilities declare."""


def test_the_engine_is_one_small_module() -> None:
    source = Path(__file__).read_text(encoding="utf-8")
    engine = source[source.index("class DictEngine") : source.index("class DictStore")]
    assert len(engine.splitlines()) <= ENGINE_MODULE_LINES
