"""`CoreStore`: every public store method, written once over an `Engine`.

An engine (Qdrant Edge or a Qdrant server, PostgreSQL with pgvector, or a third-party
database) implements `archivist.rag.store.core.engine.Engine`, and a store class is
`CoreStore` made with one: the argument checks, the search plan, grouping per document, the
results, BM25 term counting, the crash-safe replace and the repair protocol are the core's,
so every engine behaves alike.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterable, Sequence
from typing import Generic, Self

from archivist._util.off_loop import off_loop
from archivist.embedding.relevance import RelevanceCurves
from archivist.errors import InvalidArgumentError
from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary, VectorRecord, VectorSearchResult
from archivist.rag.store.base import VectorStoreBase
from archivist.rag.store.core.arguments import (
    SEARCH_MODES,
    SearchMode,
    check_chunk_page,
    check_document_arguments,
    check_search,
)
from archivist.rag.store.core.bm25 import Bm25Encoder, TermCounts
from archivist.rag.store.core.engine import Engine, H, S, W, missing_collection
from archivist.rag.store.core.generations import (
    GenerationInfo,
    discard_noting,
    new_generation,
    repair_generations,
    write_generation,
)
from archivist.rag.store.core.points import PointWrite, points_for, term_counts
from archivist.rag.store.core.query import best_hits, plan_query, search_results
from archivist.rag.store.search_filter import SearchFilter
from archivist.validation import (
    MetadataFilter,
    check_collection_name,
    check_document_id,
    check_metadata_filter,
    check_non_negative_int,
    check_positive_int,
)


class CoreStore(VectorStoreBase, Generic[S, W, H]):
    """A vector store whose public methods are the core's, over `engine`'s steps.

    BM25 totals (the chunks with terms and their lengths, for the average chunk length) are
    those of the chunks stored: the engine's `write` adds the written chunks' (and takes off
    those it overwrites), its `remove` takes off the removed chunks', so new chunks are
    weighed as if what was deleted had never been written. A term's IDF is the engine's:
    Qdrant Edge counts deleted points in it until it vacuums their segment.
    """

    HYBRID_DEPTH = 50
    """Candidates each side of a hybrid search fetches (at least `top_k`) to be ranked
    together by relevance. Deeper candidates change no SciFact top 10 (see
    `python -m benchmarks search_trust depth`) and cost time in every search."""

    def __init__(self, engine: Engine[S, W, H]) -> None:
        self._engine = engine
        self._encoders: dict[int, Bm25Encoder] = {}
        self._collections_lock = asyncio.Lock()

    async def __aenter__(self) -> Self:
        await self._engine.open()
        return self

    async def aclose(self) -> None:
        """Close the engine; `async with` does."""
        await self._engine.close()

    # Collections

    async def create_collection(self, name: str, dimensions: int, *, sparse: bool = True) -> None:
        """Create collection `name` for `dimensions`-d vectors, with BM25 terms for hybrid
        search unless `sparse` is False; a no-op if it exists with the same dimensions."""
        check_collection_name(name)
        check_positive_int(dimensions, "dimensions")
        if not isinstance(sparse, bool):
            raise InvalidArgumentError(f"sparse must be a bool, got {sparse!r}", argument="sparse")
        self._engine.check_open()
        async with self._collections_lock:
            existing = await self._engine.create_collection(name, dimensions, sparse)
        if existing.dimensions != dimensions:
            raise InvalidArgumentError(
                f"collection {name!r} exists with {existing.dimensions} dimensions, "
                f"not dimensions={dimensions}",
                argument="dimensions",
            )

    async def delete_collection(self, name: str) -> None:
        check_collection_name(name)
        self._engine.check_open()
        async with self._collections_lock:
            await self._engine.delete_collection(name)

    async def has_collection(self, name: str) -> bool:
        check_collection_name(name)
        return await self._engine.shape(name, fresh=True) is not None

    async def collection_dimensions(self, name: str) -> int | None:
        check_collection_name(name)
        shape = await self._engine.shape(name, fresh=True)
        return None if shape is None else shape.dimensions

    async def optimize(self, collection: str) -> None:
        """Build the search indexes the engine builds after a bulk load (Qdrant Edge: those of
        every segment that filled up); a no-op for an engine that indexes on write."""
        check_collection_name(collection)
        await self._engine.optimize(collection)

    async def search_modes(self, collection: str) -> tuple[SearchMode, ...]:
        """All three modes for a collection with BM25 terms; only "dense" otherwise."""
        check_collection_name(collection)
        shape = await self._engine.shape(collection)
        return SEARCH_MODES if shape is not None and shape.sparse else ("dense",)

    async def term_layout(self, collection: str) -> int | None:
        check_collection_name(collection)
        shape = await self._engine.shape(collection)
        return shape.term_layout if shape is not None and shape.sparse else None

    async def _require(self, name: str) -> S:
        """The shape of collection `name`; an error naming it if there is none."""
        shape = await self._engine.shape(name)
        if shape is None:
            raise missing_collection(name)
        return shape

    def _encoder(self, shape: S) -> Bm25Encoder:
        """The BM25 encoder of the term layout `shape`'s collection was indexed with."""
        encoder = self._encoders.get(shape.term_layout)
        if encoder is None:
            encoder = self._encoders[shape.term_layout] = Bm25Encoder(shape.term_layout)
        return encoder

    # Reading

    async def search(
        self,
        collection: str,
        query_vector: list[float] | None,
        top_k: int = 5,
        metadata_filter: MetadataFilter | None = None,
        *,
        query_text: str | None = None,
        mode: SearchMode = "dense",
        diversity: float | None = None,
        max_per_document: int | None = None,
        search_filter: SearchFilter | None = None,
        relevance_curves: RelevanceCurves | None = None,
    ) -> list[VectorSearchResult]:
        """The `top_k` best chunks within `metadata_filter` and `search_filter`, by `mode`,
        best first by relevance (`archivist.rag.store.core.ranking`, by `relevance_curves`,
        the default model's when None):

        "dense" ranks by `query_vector` (scores are similarities); "sparse" by BM25 of
        `query_text` (scores are BM25 sums); "hybrid" takes the best chunks of both sides and
        ranks them together (scores are relevances). Sparse and hybrid need a collection with
        BM25 terms. With `diversity` (0 = relevance only .. 1 = diversity only; dense and
        hybrid), hits are picked by maximal marginal relevance and come in the order picked.
        With `max_per_document`, at most that many chunks of one document. An option the
        store's `capabilities` do not declare is a ValueError.
        """
        checked = check_search(
            collection,
            query_vector,
            top_k,
            metadata_filter,
            query_text=query_text,
            mode=mode,
            diversity=diversity,
            max_per_document=max_per_document,
            search_filter=search_filter,
            relevance_curves=relevance_curves,
        )
        self.capabilities.refuse_undeclared(checked, type(self).__name__)
        shape = await self._engine.shape(collection)
        if shape is None:
            return []
        query = plan_query(
            collection,
            query_vector,
            query_text,
            checked.mode,
            dimensions=shape.dimensions,
            encoder=self._encoder(shape) if shape.sparse else None,
        )
        if query is None:
            return []  # no searchable term in the query
        scope = await self._engine.scope(collection, checked.metadata_filter)
        ranked = await self._engine.ranker(
            collection, shape, scope, query, checked, self.HYBRID_DEPTH
        )
        if ranked is None:
            return []
        engine = self._engine
        hits = await best_hits(
            ranked, engine.document_of, engine.tie_break, checked.top_k, checked.max_per_document
        )
        return search_results(hits, query, engine.document_of, engine.chunk_of)

    async def list_documents(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[DocumentSummary]:
        """One summary per document (by id), counting its chunks within `metadata_filter`,
        described by its lowest chunk."""
        check_collection_name(collection)
        checked = check_metadata_filter(metadata_filter)
        shape = await self._engine.shape(collection)
        if shape is None:
            return []
        scope = await self._engine.scope(collection, checked)
        return await self._engine.summaries(collection, shape, scope)

    async def document_summary(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> DocumentSummary | None:
        """One document's summary, read through an index whatever the collection's size."""
        checked = check_document_arguments(collection, document_id, metadata_filter)
        shape = await self._engine.shape(collection)
        if shape is None:
            return None
        scope = await self._engine.scope(collection, checked)
        return await self._engine.summary(collection, shape, scope, document_id)

    async def list_chunks(
        self,
        collection: str,
        document_id: str,
        offset: int = 0,
        limit: int = 30,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[Chunk]:
        """The chunks of `document_id` in `chunk_index` order, from `offset`, at most `limit`."""
        checked = check_chunk_page(collection, document_id, offset, limit, metadata_filter)
        shape = await self._engine.shape(collection)
        if shape is None or limit == 0:
            return []
        scope = await self._engine.scope(collection, checked)
        return await self._engine.chunk_page(collection, shape, scope, document_id, offset, limit)

    async def chunk_window(
        self,
        collection: str,
        document_id: str,
        first: int,
        last: int,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[Chunk]:
        """The chunks of `document_id` indexed `first`..`last`: one range condition on the
        indexed `chunk_index`, so a window deep in a long document reads only its chunks."""
        checked = check_document_arguments(collection, document_id, metadata_filter)
        check_non_negative_int(first, "first")
        check_non_negative_int(last, "last")
        shape = await self._engine.shape(collection)
        if shape is None or last < first:
            return []
        scope = await self._engine.scope(collection, checked)
        return await self._engine.chunk_range(collection, shape, scope, document_id, first, last)

    async def document_generations(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
        document_id: str | None = None,
    ) -> list[GenerationInfo]:
        """Every (document, generation) within `metadata_filter` with the chunk indexes it
        holds: a scan of the chunk headers (no content), for `KnowledgeBase.verify`."""
        check_collection_name(collection)
        if document_id is not None:
            check_document_id(document_id)
        checked = check_metadata_filter(metadata_filter)
        shape = await self._engine.shape(collection)
        if shape is None:
            return []
        scope = await self._engine.scope(collection, checked)
        return await self._engine.generations(collection, shape, scope, document_id)

    # Writing

    async def insert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        """Write `records` as one write: all of them, or (on any error) none. A record whose
        document id, chunk index and metadata are already stored replaces that chunk."""
        check_collection_name(collection)
        self._engine.check_open()
        if not records:
            return
        shape = await self._require(collection)
        generation = new_generation()
        points = await off_loop(  # Python per record
            functools.partial(points_for, records, shape.dimensions, generation, stable_ids=True),
            len(records),
        )
        try:
            await self._write(collection, shape, records, points)
        except BaseException as error:
            await discard_noting(
                functools.partial(self._discard, collection, shape), generation, error
            )
            raise

    async def replace_document(
        self,
        collection: str,
        document_id: str,
        batches: AsyncIterable[list[VectorRecord]],
        metadata_filter: MetadataFilter | None = None,
    ) -> int:
        """Write `batches` as the whole of `document_id` (within `metadata_filter`) as a new
        generation, then drop the old one; if anything fails, the new chunks are removed and
        the old version stays whole. A process killed part-way leaves the old version beside
        a partial new one, which `repair_document` removes."""
        checked = check_document_arguments(collection, document_id, metadata_filter)
        shape = await self._require(collection)
        scope = await self._engine.scope(collection, checked)
        seen: set[tuple[str, int]] = set()

        async def write(batch: list[VectorRecord], generation: str) -> int:
            points = await off_loop(
                functools.partial(
                    points_for,
                    batch,
                    shape.dimensions,
                    generation,
                    document_id=document_id,
                    metadata_filter=checked,
                    seen=seen,
                ),
                len(batch),
            )
            if points:
                await self._write(collection, shape, batch, points, overwrites=False)
            return len(points)

        async def drop_older(generation: str) -> None:
            await self._engine.remove(collection, shape, scope, document_id, keep=generation)

        return await write_generation(
            batches,
            lock=self._engine.document_lock(collection, document_id),
            write=write,
            drop_older=drop_older,
            discard=functools.partial(self._discard, collection, shape),
        )

    async def delete(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> None:
        """Delete every chunk of `document_id` within `metadata_filter`; a no-op when the
        collection does not exist."""
        checked = check_document_arguments(collection, document_id, metadata_filter)
        shape = await self._engine.shape(collection)
        if shape is None:
            return
        scope = await self._engine.scope(collection, checked)
        async with self._engine.document_lock(collection, document_id):
            await self._engine.remove(collection, shape, scope, document_id)

    async def repair_document(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[GenerationInfo]:
        """Make `document_id` (within `metadata_filter`) whole again; returns what was removed.

        Holds the document's lock, so a write of it in flight finishes first and is never
        mistaken for a leftover. See `generations.repair_plan` for what is kept.
        """
        checked = check_document_arguments(collection, document_id, metadata_filter)
        shape = await self._engine.shape(collection)
        if shape is None:
            return []
        scope = await self._engine.scope(collection, checked)

        async def remove(stale: GenerationInfo) -> None:
            await self._engine.remove(
                collection, shape, scope, document_id, generation=stale.generation
            )

        return await repair_generations(
            lock=self._engine.document_lock(collection, document_id),
            generations=functools.partial(
                self._engine.generations, collection, shape, scope, document_id
            ),
            remove=remove,
        )

    async def _discard(self, collection: str, shape: S, generation: str) -> None:
        """Remove what a failed write of `generation` stored."""
        await self._engine.remove(collection, shape, None, None, generation=generation)

    async def _write(
        self,
        collection: str,
        shape: S,
        records: Sequence[VectorRecord],
        points: list[PointWrite],
        *,
        overwrites: bool = True,
    ) -> None:
        """Have the engine store `points` (made of `records`, one each) with the BM25 terms of
        their text, counted off the loop (Python per chunk) in a collection that has them."""
        counts: list[TermCounts | None] = [None] * len(points)
        if shape.sparse:
            encoder = self._encoder(shape)
            counts = await off_loop(functools.partial(term_counts, encoder, records), len(records))
        await self._engine.write(collection, shape, points, counts, overwrites=overwrites)
