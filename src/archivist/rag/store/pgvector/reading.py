"""`PgVectorReading`: how `PgVectorEngine` searches and reads, in SQL."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from psycopg import errors, sql
from psycopg.rows import dict_row

from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary
from archivist.rag.store.core.arguments import SearchArguments
from archivist.rag.store.core.generations import GenerationInfo
from archivist.rag.store.core.layout import DOCUMENT_ID, GENERATION, METADATA, SOURCE, chunk_from
from archivist.rag.store.core.query import Query, Ranked
from archivist.rag.store.core.ranking import Judged, rank
from archivist.rag.store.pgvector.filter import SqlScope
from archivist.rag.store.pgvector.narrowing import narrowed
from archivist.rag.store.pgvector.schema import Collection
from archivist.rag.store.pgvector.search import (
    CHUNK_COLUMNS,
    Limits,
    Row,
    SearchPlan,
    document_of,
    tie_break,
)

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool


class PgVectorReading(ABC):
    """The searches and reads of `PgVectorEngine`, over its pool and the collections it
    remembers (a collection dropped by another process meanwhile is forgotten)."""

    EF_SEARCH = 100
    """Smallest HNSW candidate list per search (at least the results wanted): Qdrant's
    default, widened for a filtered search by `CANDIDATES_PER_RESULT`."""
    CANDIDATES_PER_RESULT = 6
    """In-scope chunks a filtered graph search's candidate list should hold per result
    wanted: its list grows as the share of the collection in scope shrinks."""
    EXACT_BELOW = 10_000
    """A filtered dense search over fewer matching chunks ranks them exactly (no graph),
    as Qdrant does below its full-scan threshold: exact, and cheap at that size."""

    _registry: sql.Identifier
    _collections: dict[str, Collection]

    @abstractmethod
    def _open(self) -> AsyncConnectionPool:
        """The engine's connection pool; RuntimeError when it is not open."""

    async def ranker(
        self,
        collection: str,
        shape: Collection,
        scope: SqlScope,
        query: Query,
        search: SearchArguments,
        depth: int,
    ) -> Ranked[Row] | None:
        """Rows ranked in SQL (`SearchPlan`, within the search filter's conditions), judged as
        every store judges its hits; none if nothing can match or another process dropped
        the collection meanwhile."""
        if search.search_filter is not None:
            fetch = functools.partial(self._fetch, collection)
            within = await narrowed(fetch, shape.tables.chunks, scope, search.search_filter)
            if within is None:
                return None
            scope = within
        plan = SearchPlan(
            self._open(),
            self._registry,
            collection,
            shape.tables,
            shape.distance,
            shape.datatype,
            query.dense,
            None if query.sparse is None else query.sparse.indices,
            *scope,
            Limits(depth, self.EF_SEARCH, self.EXACT_BELOW, self.CANDIDATES_PER_RESULT),
        )
        try:
            query_idf = await plan.query_idf()
        except errors.UndefinedTable:
            self._collections.pop(collection, None)
            return None
        judge_row = plan.judge(query_idf, search.relevance_curves)

        async def ranked(excluded: tuple[str, ...], limit: int) -> list[Judged[Row]]:
            try:
                rows = await plan.rows(query_idf, excluded, limit)
            except errors.UndefinedTable:
                self._collections.pop(collection, None)
                return []
            return rank(map(judge_row, rows), tie_break)[:limit]

        return ranked

    document_of = staticmethod(document_of)
    tie_break = staticmethod(tie_break)

    @staticmethod
    def chunk_of(hit: Row) -> Chunk:
        return _chunk(hit)

    async def summaries(
        self, collection: str, shape: Collection, scope: SqlScope
    ) -> list[DocumentSummary]:
        condition, params = scope
        statement = sql.SQL(
            "SELECT DISTINCT ON (c.document_id) c.document_id, c.source, c.metadata, "
            "count(*) OVER (PARTITION BY c.document_id) AS chunk_count "
            "FROM {} c WHERE {} ORDER BY c.document_id, c.chunk_index, c.generation"
        ).format(shape.tables.chunks, condition)
        return [_summary(row) for row in await self._fetch(collection, statement, params)]

    async def summary(
        self, collection: str, shape: Collection, scope: SqlScope, document_id: str
    ) -> DocumentSummary | None:
        """Through the (document_id, chunk_index) index, whatever the collection's size."""
        condition, params = scope
        statement = sql.SQL(
            "SELECT c.document_id, c.source, c.metadata, count(*) OVER () AS chunk_count "
            "FROM {} c WHERE c.document_id = %s AND {} "
            "ORDER BY c.chunk_index, c.generation LIMIT 1"
        ).format(shape.tables.chunks, condition)
        rows = await self._fetch(collection, statement, [document_id, *params])
        return _summary(rows[0]) if rows else None

    async def chunk_page(
        self,
        collection: str,
        shape: Collection,
        scope: SqlScope,
        document_id: str,
        offset: int,
        limit: int,
    ) -> list[Chunk]:
        page = (sql.SQL("OFFSET %s LIMIT %s"), [offset, limit])
        return await self._chunks(collection, shape, scope, document_id, tail=page)

    async def chunk_range(
        self,
        collection: str,
        shape: Collection,
        scope: SqlScope,
        document_id: str,
        first: int,
        last: int,
    ) -> list[Chunk]:
        between = (sql.SQL("c.chunk_index BETWEEN %s AND %s"), [first, last])
        return await self._chunks(collection, shape, scope, document_id, where=between)

    async def _chunks(
        self,
        collection: str,
        shape: Collection,
        scope: SqlScope,
        document_id: str,
        *,
        where: SqlScope | None = None,
        tail: SqlScope | None = None,
    ) -> list[Chunk]:
        """The chunks of `document_id` within `scope` and `where`, in order, then `tail`
        (each a piece of SQL with its parameters)."""
        where = where or (sql.SQL("TRUE"), [])
        tail = tail or (sql.SQL(""), [])
        statement = sql.SQL(
            "SELECT {} FROM {} c WHERE c.document_id = %s AND {} AND {} "
            "ORDER BY c.chunk_index, c.generation {}"
        ).format(CHUNK_COLUMNS, shape.tables.chunks, where[0], scope[0], tail[0])
        values = [document_id, *where[1], *scope[1], *tail[1]]
        return [_chunk(row) for row in await self._fetch(collection, statement, values)]

    async def generations(
        self, collection: str, shape: Collection, scope: SqlScope, document_id: str | None
    ) -> list[GenerationInfo]:
        condition, scope_params = scope
        one = sql.SQL("c.document_id = %s") if document_id is not None else sql.SQL("TRUE")
        statement = sql.SQL(
            "SELECT c.document_id, c.generation, "
            "array_agg(c.chunk_index ORDER BY c.chunk_index) AS indexes, "
            "array_agg(DISTINCT c.total_chunks) AS totals "
            "FROM {} c WHERE {} AND {} GROUP BY c.document_id, c.generation "
            "ORDER BY c.document_id, c.generation"
        ).format(shape.tables.chunks, one, condition)
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


def _summary(row: Mapping[str, Any]) -> DocumentSummary:
    return DocumentSummary(
        document_id=row[DOCUMENT_ID],
        source=row[SOURCE],
        chunk_count=int(row["chunk_count"]),
        metadata=row[METADATA] or {},
    )


def _chunk(row: Mapping[str, Any]) -> Chunk:
    return chunk_from({**row, METADATA: row[METADATA] or {}})
