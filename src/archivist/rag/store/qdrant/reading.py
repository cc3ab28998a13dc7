"""`QdrantReading`: how `QdrantEngine` searches and reads, over its backend."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary
from archivist.rag.store.core.arguments import SearchArguments
from archivist.rag.store.core.bm25 import SparseVector
from archivist.rag.store.core.engine import CollectionShape
from archivist.rag.store.core.generations import GenerationInfo
from archivist.rag.store.core.layout import (
    CHUNK_INDEX,
    DOCUMENT_ID,
    GENERATION,
    SUMMARY_FIELDS,
    TOTAL_CHUNKS,
    chunk_from,
    summary_from,
)
from archivist.rag.store.core.query import Query, Ranked
from archivist.rag.store.core.ranking import Judged, rank
from archivist.rag.store.qdrant.backend import (
    SPARSE_VECTOR,
    QdrantBackend,
    ScoredPoint,
    SearchRequest,
)
from archivist.rag.store.qdrant.filter import AnyOf, Between, Match, Where
from archivist.rag.store.qdrant.hybrid import (
    chunk_of,
    document_of,
    hybrid_hits,
    judge_for,
    term_weights,
    tie_break,
)
from archivist.rag.store.qdrant.narrowing import narrowed


class QdrantReading(ABC):
    """The searches and reads of `QdrantEngine`, over its open backend."""

    SCROLL_PAGE = 1024
    """Points per page when reading many payloads."""

    @abstractmethod
    def _open(self) -> QdrantBackend:
        """The engine's backend; RuntimeError when it is not open."""

    async def ranker(
        self,
        collection: str,
        shape: CollectionShape,
        scope: Where,
        query: Query,
        search: SearchArguments,
        depth: int,
    ) -> Ranked[ScoredPoint] | None:
        """Hits ranked by the engine's query (narrowed natively by the search filter), judged
        from the vectors stored with them; a hybrid search ranks both sides' candidates."""
        if search.search_filter is not None:
            within = await narrowed(self._open(), collection, scope, search.search_filter)
            if within is None:
                return None
            scope = within
        dense, sparse, diversity = query.dense, query.sparse, search.diversity
        query_idf: dict[int, float] = {}
        if sparse is not None:
            terms = await term_weights(self._open(), collection, scope, sparse)
            query_idf, sparse = terms.weights, terms.sparse
        curves = search.relevance_curves
        judge_hit = judge_for(shape, dense, sparse, query_idf, curves)
        backend = self._open()

        async def ranked(excluded: tuple[str, ...], limit: int) -> list[Judged[ScoredPoint]]:
            where = scope
            if excluded:
                where = Where(scope.must, (*scope.must_not, AnyOf(DOCUMENT_ID, excluded)))
            candidates = max(limit, depth)
            if dense is not None and sparse is not None and diversity is None:
                return await hybrid_hits(
                    backend,
                    collection,
                    shape,
                    where,
                    dense,
                    sparse,
                    query_idf,
                    limit,
                    candidates,
                    curves,
                )
            request = SearchRequest(
                limit=limit,
                where=where,
                dense=dense,
                sparse=sparse,
                depth=candidates,
                diversity=diversity,
                # Maximal marginal relevance over both sides: each pick is judged by its
                # cosine similarity and its BM25 terms, read from its stored vectors.
                vectors=("", SPARSE_VECTOR) if query.hybrid else (),
            )
            hits = await backend.search(collection, request)
            if diversity is not None:  # in the order maximal marginal relevance picked them
                return [judge_hit(hit) for hit in hits]
            return rank(map(judge_hit, hits), tie_break)[:limit]

        return ranked

    document_of = staticmethod(document_of)
    tie_break = staticmethod(tie_break)
    chunk_of = staticmethod(chunk_of)

    async def term_weights(
        self, collection: str, scope: Where, sparse: SparseVector
    ) -> dict[int, float]:
        """The IDF of each of `sparse`'s terms the lexical evidence of a search in `scope`
        weighs (`ranking.query_weights`)."""
        return (await term_weights(self._open(), collection, scope, sparse)).weights

    async def summaries(
        self, collection: str, shape: CollectionShape, scope: Where
    ) -> list[DocumentSummary]:
        """Chunk counts per document from one facet, and each document's chunk 0."""
        backend = self._open()
        total = await backend.count(collection, scope)
        if total == 0:
            return []
        counts = await backend.facet(collection, DOCUMENT_ID, scope, limit=total)
        firsts: dict[str, dict[str, Any]] = {}
        first_chunks = scope.also(Match(CHUNK_INDEX, 0))
        async for page in backend.scroll(
            collection, first_chunks, SUMMARY_FIELDS, self.SCROLL_PAGE
        ):
            for stored in page:
                firsts.setdefault(stored[DOCUMENT_ID], stored)
        for document_id in sorted(counts.keys() - firsts.keys()):
            # A document written without a chunk 0: summarise it from its lowest chunk.
            lowest = await backend.scroll_ordered(
                collection, scope.also(Match(DOCUMENT_ID, document_id)), CHUNK_INDEX, 1
            )
            firsts[document_id] = lowest[0]
        return [
            summary_from(firsts[document_id], counts[document_id]) for document_id in sorted(counts)
        ]

    async def summary(
        self, collection: str, shape: CollectionShape, scope: Where, document_id: str
    ) -> DocumentSummary | None:
        """Two indexed lookups: the chunk count, and the lowest chunk's payload."""
        scope = scope.also(Match(DOCUMENT_ID, document_id))
        backend = self._open()
        count = await backend.count(collection, scope)
        if count == 0:
            return None
        first = await backend.scroll_ordered(collection, scope, CHUNK_INDEX, 1)
        return summary_from(first[0], count) if first else None

    async def chunk_page(
        self,
        collection: str,
        shape: CollectionShape,
        scope: Where,
        document_id: str,
        offset: int,
        limit: int,
    ) -> list[Chunk]:
        stored = await self._open().scroll_ordered(
            collection, scope.also(Match(DOCUMENT_ID, document_id)), CHUNK_INDEX, offset + limit
        )
        return [chunk_from(payload) for payload in stored[offset:]]

    async def chunk_range(
        self,
        collection: str,
        shape: CollectionShape,
        scope: Where,
        document_id: str,
        first: int,
        last: int,
    ) -> list[Chunk]:
        window = scope.also(
            Match(DOCUMENT_ID, document_id), Between(CHUNK_INDEX, gte=first, lte=last)
        )
        stored = await self._open().scroll_ordered(
            collection, window, CHUNK_INDEX, last - first + 1
        )
        return [chunk_from(payload) for payload in stored]

    async def generations(
        self, collection: str, shape: CollectionShape, scope: Where, document_id: str | None
    ) -> list[GenerationInfo]:
        """A scan of the chunk headers within `scope`."""
        if document_id is not None:
            scope = scope.also(Match(DOCUMENT_ID, document_id))
        found: dict[tuple[str, str], tuple[list[int], set[int]]] = {}
        fields = (DOCUMENT_ID, GENERATION, CHUNK_INDEX, TOTAL_CHUNKS)
        async for page in self._open().scroll(collection, scope, fields, self.SCROLL_PAGE):
            for stored in page:
                key = (str(stored[DOCUMENT_ID]), str(stored.get(GENERATION, "")))
                indexes, totals = found.setdefault(key, ([], set()))
                indexes.append(int(stored[CHUNK_INDEX]))
                totals.add(int(stored[TOTAL_CHUNKS]))
        return [
            GenerationInfo(
                document_id=document_id,
                generation=generation,
                chunk_indexes=sorted(indexes),
                total_chunks=sorted(totals),
            )
            for (document_id, generation), (indexes, totals) in sorted(found.items())
        ]
