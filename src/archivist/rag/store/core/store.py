"""`CoreStore`: every public store method, written once over an engine's few steps.

An engine (Qdrant Edge or a Qdrant server, PostgreSQL with pgvector, or a third-party
database) subclasses `CoreStore` and implements only the steps marked "Engine steps" below:
how a metadata filter becomes its native scope, how it ranks one search's candidates, reads
summaries, chunks and generations, writes points and removes chunks, and how it locks one
document. The argument checks, the search plan, grouping per document, the results, the
crash-safe replace and the repair protocol are the core's, so every engine behaves alike.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import AsyncIterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Generic, TypeVar

from archivist._util.off_loop import off_loop
from archivist.embedding.relevance import RelevanceCurves
from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary, VectorRecord, VectorSearchResult
from archivist.rag.store.core.arguments import (
    SearchArguments,
    SearchMode,
    check_chunk_page,
    check_document_arguments,
    check_search,
)
from archivist.rag.store.core.generations import (
    GenerationInfo,
    discard_noting,
    new_generation,
    repair_generations,
    write_generation,
)
from archivist.rag.store.core.points import PointWrite, points_for
from archivist.rag.store.core.query import Query, Ranked, best_hits, plan_query, search_results
from archivist.rag.store.core.shaped import S, ShapedStore
from archivist.rag.store.search_filter import SearchFilter
from archivist.validation import (
    MetadataFilter,
    check_collection_name,
    check_document_id,
    check_metadata_filter,
    check_non_negative_int,
)

W = TypeVar("W")
"""An engine's native scope: a metadata filter as its own condition."""
H = TypeVar("H")
"""An engine's search hit, before it becomes a `VectorSearchResult`."""


class CoreStore(ShapedStore[S], Generic[S, W, H]):
    """A vector store whose public methods are the core's; an engine supplies its steps.

    BM25 totals (the chunks with terms and their lengths, for the average chunk length) are
    those of the chunks stored: `_write` adds the written chunks' (and takes off those it
    overwrites), `_remove` takes off the removed chunks', so new chunks are weighed as if what
    was deleted had never been written. A term's IDF is the engine's: Qdrant Edge counts
    deleted points in it until it vacuums their segment.
    """

    HYBRID_DEPTH = 50
    """Candidates each side of a hybrid search fetches (at least `top_k`) to be ranked
    together by relevance. Deeper candidates change no SciFact top 10 (see
    `python -m benchmarks search_trust depth`) and cost time in every search."""

    # Engine steps

    @abstractmethod
    def _open(self) -> object:
        """The open engine; RuntimeError outside `async with store:`."""

    @abstractmethod
    async def _scope(self, collection: str, metadata_filter: MetadataFilter | None) -> W:
        """`metadata_filter` (checked) as the engine's native condition in `collection`."""

    @abstractmethod
    async def _ranker(
        self, collection: str, shape: S, scope: W, query: Query, search: SearchArguments
    ) -> Ranked[H] | None:
        """How the engine ranks `query`'s hits within `scope` (the best `limit` outside the
        documents excluded, judged by `archivist.rag.store.core.ranking`); None when
        `search.search_filter` leaves nothing to search."""

    @abstractmethod
    def _document_of(self, hit: H) -> str:
        """The document `hit` belongs to."""

    @abstractmethod
    def _tie_break(self, hit: H) -> tuple[str, ...]:
        """The order of hits judged alike: the chunk's point id, the same in every engine."""

    @abstractmethod
    def _chunk_of(self, hit: H) -> Chunk:
        """The chunk `hit` holds."""

    @abstractmethod
    async def _summaries(self, collection: str, shape: S, scope: W) -> list[DocumentSummary]:
        """One summary per document within `scope`, by document id."""

    @abstractmethod
    async def _summary(
        self, collection: str, shape: S, scope: W, document_id: str
    ) -> DocumentSummary | None:
        """The summary of `document_id` within `scope`, read without the other documents."""

    @abstractmethod
    async def _chunk_page(
        self, collection: str, shape: S, scope: W, document_id: str, offset: int, limit: int
    ) -> list[Chunk]:
        """`limit` (>0) chunks of `document_id` from position `offset`, in chunk order."""

    @abstractmethod
    async def _chunk_range(
        self, collection: str, shape: S, scope: W, document_id: str, first: int, last: int
    ) -> list[Chunk]:
        """The chunks of `document_id` with `first` <= chunk_index <= `last`, in order."""

    @abstractmethod
    async def _generations(
        self, collection: str, shape: S, scope: W, document_id: str | None
    ) -> list[GenerationInfo]:
        """Every (document, generation) within `scope` (of `document_id` only, if given)."""

    @abstractmethod
    async def _write(
        self,
        collection: str,
        shape: S,
        records: Sequence[VectorRecord],
        points: list[PointWrite],
        *,
        overwrites: bool = True,
    ) -> None:
        """Store `points` (made of `records`, one each) with the BM25 terms of their text,
        adding those chunks to the collection's BM25 totals (and taking off the chunks they
        overwrite; `overwrites=False` says their ids are new, as a replace's are)."""

    @abstractmethod
    async def _remove(
        self,
        collection: str,
        shape: S,
        scope: W | None,
        document_id: str | None,
        *,
        generation: str | None = None,
        keep: str | None = None,
    ) -> None:
        """Remove the chunks within `scope` (None: anywhere) of `document_id` (None: of any),
        of `generation` only, or of every generation but `keep`; subtract them from the
        collection's BM25 totals."""

    @abstractmethod
    def _document_lock(
        self, collection: str, document_id: str
    ) -> AbstractAsyncContextManager[object]:
        """Held while one document is replaced, deleted or repaired."""

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
        shape = await self._shape(collection)
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
        scope = await self._scope(collection, checked.metadata_filter)
        ranked = await self._ranker(collection, shape, scope, query, checked)
        if ranked is None:
            return []
        hits = await best_hits(
            ranked, self._document_of, self._tie_break, checked.top_k, checked.max_per_document
        )
        return search_results(hits, query, self._document_of, self._chunk_of)

    async def list_documents(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[DocumentSummary]:
        """One summary per document (by id), counting its chunks within `metadata_filter`,
        described by its lowest chunk."""
        check_collection_name(collection)
        checked = check_metadata_filter(metadata_filter)
        shape = await self._shape(collection)
        if shape is None:
            return []
        return await self._summaries(collection, shape, await self._scope(collection, checked))

    async def document_summary(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> DocumentSummary | None:
        """One document's summary, read through an index whatever the collection's size."""
        checked = check_document_arguments(collection, document_id, metadata_filter)
        shape = await self._shape(collection)
        if shape is None:
            return None
        scope = await self._scope(collection, checked)
        return await self._summary(collection, shape, scope, document_id)

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
        shape = await self._shape(collection)
        if shape is None or limit == 0:
            return []
        scope = await self._scope(collection, checked)
        return await self._chunk_page(collection, shape, scope, document_id, offset, limit)

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
        shape = await self._shape(collection)
        if shape is None or last < first:
            return []
        scope = await self._scope(collection, checked)
        return await self._chunk_range(collection, shape, scope, document_id, first, last)

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
        shape = await self._shape(collection)
        if shape is None:
            return []
        scope = await self._scope(collection, checked)
        return await self._generations(collection, shape, scope, document_id)

    # Writing

    async def insert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        """Write `records` as one write: all of them, or (on any error) none. A record whose
        document id, chunk index and metadata are already stored replaces that chunk."""
        check_collection_name(collection)
        self._open()
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
        scope = await self._scope(collection, checked)
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
            await self._remove(collection, shape, scope, document_id, keep=generation)

        return await write_generation(
            batches,
            lock=self._document_lock(collection, document_id),
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
        shape = await self._shape(collection)
        if shape is None:
            return
        scope = await self._scope(collection, checked)
        async with self._document_lock(collection, document_id):
            await self._remove(collection, shape, scope, document_id)

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
        shape = await self._shape(collection)
        if shape is None:
            return []
        scope = await self._scope(collection, checked)

        async def remove(stale: GenerationInfo) -> None:
            await self._remove(collection, shape, scope, document_id, generation=stale.generation)

        return await repair_generations(
            lock=self._document_lock(collection, document_id),
            generations=functools.partial(self._generations, collection, shape, scope, document_id),
            remove=remove,
        )

    async def _discard(self, collection: str, shape: S, generation: str) -> None:
        """Remove what a failed write of `generation` stored."""
        await self._remove(collection, shape, None, None, generation=generation)
