"""`PgVectorStore`: chunks and vectors in PostgreSQL with pgvector, shared by many processes."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from psycopg import errors, sql
from psycopg.rows import dict_row

from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary, VectorSearchResult
from archivist.rag.store.base import MetadataFilter
from archivist.rag.store.capabilities import StoreCapabilities
from archivist.rag.store.core.arguments import (
    SEARCH_MODES,
    SearchMode,
    check_chunk_page,
    check_document_arguments,
    check_search,
)
from archivist.rag.store.core.generations import (
    GenerationInfo,
    repair_generations,
)
from archivist.rag.store.core.layout import (
    DOCUMENT_ID,
    GENERATION,
    METADATA,
    SOURCE,
    chunk_from,
)
from archivist.rag.store.core.query import best_hits, plan_query, search_results
from archivist.rag.store.core.ranking import Judged, rank
from archivist.rag.store.pgvector.collections import PgVectorCollections
from archivist.rag.store.pgvector.filter import where_metadata
from archivist.rag.store.pgvector.schema import Collection
from archivist.rag.store.pgvector.search import (
    CHUNK_COLUMNS,
    Limits,
    Row,
    SearchPlan,
    document_of,
    tie_break,
)
from archivist.rag.store.search_filter import SearchFilter
from archivist.validation import (
    check_collection_name,
    check_document_id,
)

if TYPE_CHECKING:
    pass

__all__ = ["PgVectorStore"]


class PgVectorStore(PgVectorCollections):
    """Chunks and their vectors in PostgreSQL (pgvector 0.8+); higher scores are better.

    `url` is a libpq connection string or `postgresql://` URL. The database needs the `vector`
    extension, which the store creates on first open if the user may (`CREATE EXTENSION vector`
    otherwise, once, as a superuser). Every process that opens the same database and
    `table_prefix` sees the same collections: writes and deletes are transactions, a replace is
    locked per document across processes (PostgreSQL advisory locks).

    Dense search uses an HNSW index per collection (iterative scans, so a metadata filter never
    starves the result list). Sparse search is BM25 written out in SQL over an inverted index
    table: the same terms and term weights as the Qdrant store (`archivist.rag.store.core.terms`),
    IDF from exact per-term document frequencies. `mode="hybrid"` takes the best chunks of
    both sides in one SQL statement and ranks them by relevance as the Qdrant store does
    (`archivist.rag.store.core.ranking`).

    Use it inside `async with store:`; it holds a pool of up to `max_connections` connections.
    """

    capabilities = StoreCapabilities(
        search_modes=frozenset(SEARCH_MODES),
        grouping=True,
        relevance=True,
        scoped_delete=True,
        chunk_listing=True,
        atomic_replace=True,
        generations=True,
    )
    HYBRID_DEPTH = 50
    """Candidates each side of a hybrid search fetches (at least `top_k`) to be ranked
    together by relevance. Deeper candidates change no SciFact top 10 (see
    `benchmarks/bench_search_trust.py depth`) and cost time in every search."""
    EF_SEARCH = 100
    """HNSW candidate list per search (at least the results wanted): Qdrant's default."""
    EXACT_BELOW = 10_000
    """A filtered dense search over fewer matching chunks ranks them exactly (no graph),
    as Qdrant does below its full-scan threshold: exact, and cheap at that size."""

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
    ) -> list[VectorSearchResult]:
        """The `top_k` best chunks within `metadata_filter`, by `mode`, best first by
        relevance (`archivist.rag.store.core.ranking`), as the Qdrant store ranks them:

        "dense" ranks by `query_vector` (scores are similarities); "sparse" by BM25 of
        `query_text` (scores are BM25 sums); "hybrid" takes the best chunks of both sides and
        ranks them together (scores are relevances). Sparse and hybrid need a collection with
        BM25 terms. With `max_per_document`, at most that many chunks of one document.
        `diversity` and `search_filter` are not offered (ValueError).
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
        )
        self.capabilities.refuse_undeclared(checked, type(self).__name__)
        scope, scope_params = where_metadata(checked.metadata_filter)
        found = await self._shape(collection)
        if found is None:
            return []
        query = plan_query(
            collection,
            query_vector,
            query_text,
            mode,
            dimensions=found.dimensions,
            encoder=self._encoder(found) if found.sparse else None,
        )
        if query is None:
            return []  # no searchable term in the query
        plan = SearchPlan(
            self._open(),
            self._registry,
            collection,
            found.tables,
            found.distance,
            query.dense,
            None if query.sparse is None else query.sparse.indices,
            scope,
            scope_params,
            Limits(self.HYBRID_DEPTH, self.EF_SEARCH, self.EXACT_BELOW),
        )
        try:
            query_idf = await plan.query_idf(set(query.exact))
            judge_row = plan.judge(query_idf)

            async def ranked(excluded: tuple[str, ...], limit: int) -> list[Judged[Row]]:
                rows = await plan.rows(query_idf, excluded, limit)
                return rank(map(judge_row, rows), tie_break)[:limit]

            hits = await best_hits(ranked, document_of, tie_break, top_k, max_per_document)
        except errors.UndefinedTable:
            self._collections.pop(collection, None)
            return []
        return search_results(hits, query, document_of, _chunk)

    async def list_documents(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[DocumentSummary]:
        """One summary per document (by id), counting its chunks within `metadata_filter`,
        described by its lowest chunk."""
        check_collection_name(collection)
        scope, scope_params = where_metadata(metadata_filter)
        found = await self._shape(collection)
        if found is None:
            return []
        statement = sql.SQL(
            "SELECT DISTINCT ON (c.document_id) c.document_id, c.source, c.metadata, "
            "count(*) OVER (PARTITION BY c.document_id) AS chunk_count "
            "FROM {} c WHERE {} ORDER BY c.document_id, c.chunk_index, c.generation"
        ).format(found.tables.chunks, scope)
        rows = await self._fetch(collection, statement, scope_params)
        return [
            DocumentSummary(
                document_id=row[DOCUMENT_ID],
                source=row[SOURCE],
                chunk_count=int(row["chunk_count"]),
                metadata=row[METADATA] or {},
            )
            for row in rows
        ]

    async def document_summary(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> DocumentSummary | None:
        """One document's summary through the (document_id, chunk_index) index, whatever the
        size of the collection."""
        scope, scope_params = where_metadata(
            check_document_arguments(collection, document_id, metadata_filter)
        )
        found = await self._shape(collection)
        if found is None:
            return None
        statement = sql.SQL(
            "SELECT c.source, c.metadata, count(*) OVER () AS chunk_count FROM {} c "
            "WHERE c.document_id = %s AND {} ORDER BY c.chunk_index, c.generation LIMIT 1"
        ).format(found.tables.chunks, scope)
        rows = await self._fetch(collection, statement, [document_id, *scope_params])
        if not rows:
            return None
        (row,) = rows
        return DocumentSummary(
            document_id=document_id,
            source=row[SOURCE],
            chunk_count=int(row["chunk_count"]),
            metadata=row[METADATA] or {},
        )

    async def list_chunks(
        self,
        collection: str,
        document_id: str,
        offset: int = 0,
        limit: int = 30,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[Chunk]:
        scope, scope_params = where_metadata(
            check_chunk_page(collection, document_id, offset, limit, metadata_filter)
        )
        found = await self._shape(collection)
        if found is None or limit == 0:
            return []
        statement = sql.SQL(
            "SELECT {} FROM {} c WHERE c.document_id = %s AND {} "
            "ORDER BY c.chunk_index, c.generation OFFSET %s LIMIT %s"
        ).format(CHUNK_COLUMNS, found.tables.chunks, scope)
        rows = await self._fetch(collection, statement, [document_id, *scope_params, offset, limit])
        return [_chunk(row) for row in rows]

    async def document_generations(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
        document_id: str | None = None,
    ) -> list[GenerationInfo]:
        """Every (document, generation) within `metadata_filter` with the chunk indexes it
        holds, for `KnowledgeBase.verify`."""
        check_collection_name(collection)
        if document_id is not None:
            check_document_id(document_id)
        scope, scope_params = where_metadata(metadata_filter)
        found = await self._shape(collection)
        if found is None:
            return []
        return await self._generations(collection, found, scope, scope_params, document_id)

    async def _generations(
        self,
        collection: str,
        found: Collection,
        scope: sql.Composable,
        scope_params: list[Any],
        document_id: str | None,
    ) -> list[GenerationInfo]:
        one = sql.SQL("c.document_id = %s") if document_id is not None else sql.SQL("TRUE")
        statement = sql.SQL(
            "SELECT c.document_id, c.generation, "
            "array_agg(c.chunk_index ORDER BY c.chunk_index) AS indexes, "
            "array_agg(DISTINCT c.total_chunks) AS totals "
            "FROM {} c WHERE {} AND {} GROUP BY c.document_id, c.generation "
            "ORDER BY c.document_id, c.generation"
        ).format(found.tables.chunks, one, scope)
        params = [*([document_id] if document_id is not None else []), *scope_params]
        rows = await self._fetch(collection, statement, params)
        return [
            GenerationInfo(
                document_id=row[DOCUMENT_ID],
                generation=row[GENERATION],
                chunk_indexes=list(row["indexes"]),
                total_chunks=sorted(row["totals"]),
            )
            for row in rows
        ]

    async def repair_document(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[GenerationInfo]:
        """Make `document_id` (within `metadata_filter`) whole again; returns what was removed.

        Holds the document's lock, so a replace of it in flight in any process finishes first
        and is never mistaken for a leftover. See `generations.repair_plan` for what is kept.
        """
        scope, scope_params = where_metadata(
            check_document_arguments(collection, document_id, metadata_filter)
        )
        found = await self._shape(collection)
        if found is None:
            return []

        async def remove(stale: GenerationInfo) -> None:
            await self._delete(
                collection,
                found,
                sql.SQL("c.document_id = %s AND c.generation = %s AND {}").format(scope),
                [document_id, stale.generation, *scope_params],
            )

        return await repair_generations(
            lock=self._document_lock(collection, document_id),
            generations=functools.partial(
                self._generations, collection, found, scope, scope_params, document_id
            ),
            remove=remove,
        )

    async def _fetch(
        self, collection: str, statement: sql.Composed, params: Sequence[Any]
    ) -> list[dict[str, Any]]:
        """The rows of a read; none if another process dropped the collection meanwhile."""
        try:
            async with self._open().connection() as connection:
                cursor = connection.cursor(row_factory=dict_row)
                await cursor.execute(statement, params)
                return await cursor.fetchall()
        except errors.UndefinedTable:
            self._collections.pop(collection, None)
            return []


def _chunk(row: Mapping[str, Any]) -> Chunk:
    return chunk_from({**row, METADATA: row[METADATA] or {}})
