"""How `PgVectorStore` runs one search in SQL: the query terms' IDF within the scope, each
side's best chunks, and a hybrid search's candidates with the evidence they are ranked by."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pgvector import SparseVector
from psycopg import AsyncConnection, sql
from psycopg.rows import dict_row

from archivist.embedding.relevance import RelevanceCurves
from archivist.rag.store.core.datatype import VectorDatatype
from archivist.rag.store.core.layout import DOCUMENT_ID
from archivist.rag.store.core.ranking import Judged, coverage, judge, lexical, query_weights
from archivist.rag.store.pgvector.schema import (
    DISTANCE_OPERATORS,
    SLOT_DIMENSIONS,
    Tables,
    vector_value,
)

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

Row = dict[str, Any]
"""One chunk's row: the chunk columns, its `id`, and `score` (or, in a hybrid search, its
count of BM25 `terms`, `similarity`, `bm25` and `held`)."""

CHUNK_COLUMNS = sql.SQL(
    "c.document_id, c.generation, c.chunk_index, c.total_chunks, c.source, c.content, c.metadata"
)


MAX_EF_SEARCH = 1000
"""pgvector's largest `hnsw.ef_search`."""


@dataclass(frozen=True)
class Limits:
    """How deep a search looks: see the `PgVectorReading` attributes of the same names."""

    hybrid_depth: int
    ef_search: int
    exact_below: int
    candidates_per_result: int

    def ef_for(self, depth: int, share: float) -> int:
        """The HNSW candidate list for the best `depth` chunks when a `share` (0-1] of the
        collection is in scope: the graph walk meets chunks outside the scope too, so the
        list is widened until it holds about `candidates_per_result` in-scope chunks per
        result, within pgvector's bounds (an iterative scan goes on past it if needed)."""
        wanted = self.candidates_per_result * depth / max(share, 1e-6)
        return int(min(max(self.ef_search, depth, math.ceil(wanted)), MAX_EF_SEARCH))


@dataclass(frozen=True)
class SearchPlan:
    """One search of one collection within `scope`: by `dense`, by BM25 `terms`, or both."""

    pool: AsyncConnectionPool
    registry: sql.Identifier
    collection: str
    tables: Tables
    distance: str
    datatype: VectorDatatype
    dense: list[float] | None
    terms: list[int] | None
    scope: sql.Composable
    scope_params: list[Any]
    limits: Limits
    slots: dict[int, tuple[int, float]] = field(default_factory=dict)
    """Each query term some chunk in scope holds: its slot and weight bound (`query_idf`)."""

    @property
    def hybrid(self) -> bool:
        return self.dense is not None and self.terms is not None

    async def query_idf(self) -> dict[int, float]:
        """The weight of each query term in the lexical evidence (`ranking.query_weights`),
        from its document frequency over the collection's chunks with terms, counted for
        the terms some chunk in scope holds (looking only within the scope shows nothing of
        another tenant). Remembers the slot and weight bound of each term held (`slots`)."""
        if not self.terms:
            return {}
        statement = sql.SQL(
            "WITH n AS (SELECT greatest(sparse_chunks, 1) AS n FROM {registry} WHERE name = %s) "
            "SELECT d.term, d.slot, d.weight_bound, d.df "
            "FROM {df} d WHERE d.term = ANY(%s::bigint[]) AND d.df > 0 AND EXISTS ("
            "SELECT 1 FROM {chunks} c WHERE c.slots @> ARRAY[d.slot] AND {scope}) "
            "UNION ALL SELECT NULL, NULL, NULL, n.n FROM n"
        ).format(
            registry=self.registry, df=self.tables.df, chunks=self.tables.chunks, scope=self.scope
        )
        async with self.pool.connection() as connection:
            cursor = await connection.execute(
                statement, [self.collection, self.terms, *self.scope_params]
            )
            rows = await cursor.fetchall()
        held: dict[int, int] = {}
        chunks = 0
        for term, slot, bound, value in rows:
            if term is None:
                chunks = int(value)
            else:
                held[int(term)] = int(value)
                self.slots[int(term)] = (int(slot), float(bound))
        return query_weights(held, self.terms, chunks)

    def judge(
        self, query_idf: dict[int, float], curves: RelevanceCurves
    ) -> Callable[[Row], Judged[Row]]:
        """How a row is judged: as the Qdrant store judges a hit (`ranking`), by `curves`."""
        cosine_scores = self.distance == "Cosine"

        def judged(row: Row) -> Judged[Row]:
            if self.hybrid:
                similarity = float(row["similarity"])
                match, held = None, None  # a chunk without BM25 terms (an image) has none
                if row["terms"] > 0:
                    match = lexical(query_idf, float(row["bm25"]))
                    held = coverage(query_idf, float(row["held"]))
                return judge(row, similarity, similarity, match, held, curves)
            score = float(row["score"])
            if self.terms is not None:
                return judge(row, score, lexical=lexical(query_idf, score), curves=curves)
            return judge(row, score, similarity=score if cosine_scores else None, curves=curves)

        return judged

    async def rows(
        self, query_idf: dict[int, float], excluded: Sequence[str], limit: int
    ) -> list[Row]:
        """The best `limit` rows of one side, or a hybrid search's candidates (each side's
        best `limit` or `hybrid_depth`), outside the documents `excluded`."""
        depth = max(limit, self.limits.hybrid_depth) if self.hybrid else limit
        async with self._transaction() as connection:
            exact = await self._plans_exact(connection, depth)
            essential = await self._essential(connection, query_idf, list(excluded), depth)
            statement, params = self._statement(query_idf, list(excluded), depth, exact, essential)
            cursor = connection.cursor(row_factory=dict_row)
            await cursor.execute(statement, params)
            return await cursor.fetchall()

    def _query_vector(self, query_idf: dict[int, float]) -> SparseVector:
        """The query's IDF by slot: a chunk's BM25 score is its inner product with `bm25`."""
        return SparseVector(
            {self.slots[term][0]: idf for term, idf in query_idf.items() if term in self.slots},
            SLOT_DIMENSIONS,
        )

    async def _essential(
        self,
        connection: AsyncConnection[Any],
        query_idf: dict[int, float],
        excluded: list[str],
        depth: int,
    ) -> list[int]:
        """The slots of the query terms a chunk must hold to reach the best `depth` by BM25
        (MaxScore): the best `depth` scores among the chunks holding the strongest terms set
        a threshold; the weakest terms whose upper bounds (IDF times weight bound) sum to
        less than it cannot lift a chunk holding none of the others into the results."""
        bounds = sorted(
            (idf * self.slots[term][1], self.slots[term][0])
            for term, idf in query_idf.items()
            if term in self.slots
        )
        if self.terms is None or not bounds:
            return []
        query = self._query_vector(query_idf)
        threshold = 0.0
        for strongest in sorted({1, min(3, len(bounds))}):
            seeds = [slot for _, slot in bounds[-strongest:]]
            cursor = await connection.execute(
                sql.SQL(
                    "SELECT -(c.bm25 <#> %s) FROM {} c WHERE c.slots && %s::integer[] AND {} "
                    "AND NOT (c.document_id = ANY(%s::text[])) ORDER BY c.bm25 <#> %s LIMIT %s"
                ).format(self.tables.chunks, self.scope),
                [query, seeds, *self.scope_params, excluded, query, depth],
            )
            scores = [float(score) for (score,) in await cursor.fetchall()]
            if len(scores) == depth:
                threshold = scores[-1]
                break
        # Scores are summed in single precision: a margin keeps a term whose bound comes near.
        threshold *= 1 - 1e-4
        weak = 0.0
        essential: list[int] = []
        for bound, slot in bounds:
            weak += bound
            if weak >= threshold:
                essential.append(slot)
        return essential

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncConnection[Any]]:
        async with self.pool.connection() as connection, connection.transaction():
            yield connection

    async def _plans_exact(self, connection: AsyncConnection[Any], depth: int) -> bool:
        """Whether the dense side ranks exactly rather than through the graph, which is then
        set up with `graph_breadth`'s candidate list."""
        if self.dense is None:
            return False
        breadth = await self.graph_breadth(connection, depth)
        if breadth is None:
            return True
        await connection.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        await connection.execute(
            sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(breadth))
        )
        return False

    async def graph_breadth(self, connection: AsyncConnection[Any], depth: int) -> int | None:
        """The HNSW candidate list for the best `depth` chunks in scope, widened by how small
        a share of the collection the scope holds (`Limits.ef_for`); None when so few chunks
        are in scope that ranking them exactly is cheaper, as Qdrant plans a filtered search."""
        if not self.scope_params:
            return self.limits.ef_for(depth, 1.0)
        cursor = await connection.execute(
            sql.SQL(
                "SELECT (SELECT count(*) FROM (SELECT 1 FROM {chunks} c WHERE {scope} "
                "LIMIT %s) AS s), (SELECT reltuples FROM pg_class WHERE oid = %s::regclass)"
            ).format(chunks=self.tables.chunks, scope=self.scope),
            [*self.scope_params, self.limits.exact_below, self.tables.chunks_name],
        )
        row = await cursor.fetchone()
        in_scope, total = (0, None) if row is None else (int(row[0]), row[1])
        if in_scope < self.limits.exact_below:
            return None
        # At least `in_scope` chunks are in scope (the count stops there), of the planner's
        # estimate of the table's rows (unknown, -1, until the table is first analyzed).
        share = in_scope / max(float(total or 0), in_scope)
        return self.limits.ef_for(depth, share)

    def _statement(
        self,
        query_idf: dict[int, float],
        excluded: list[str],
        depth: int,
        exact: bool,
        essential: list[int],
    ) -> tuple[sql.Composed, list[Any]]:
        tables = self.tables
        operator, _ = DISTANCE_OPERATORS[self.distance]
        query = None if self.dense is None else vector_value(self.datatype, self.dense)
        inside = sql.SQL("{} AND NOT (c.document_id = ANY(%s::text[]))").format(self.scope)
        inside_params = [*self.scope_params, excluded]
        # Ordering by the score, not the distance operator, keeps the HNSW index out: an
        # exact ranking of the chunks the filter selects (through the metadata index).
        order = (
            sql.SQL("score DESC, c.id")
            if exact
            else sql.SQL("c.embedding {} %s").format(sql.SQL(operator))
        )
        dense_sql = sql.SQL(
            "SELECT c.id, {score} AS score FROM {chunks} c WHERE {inside} ORDER BY {order} LIMIT %s"
        ).format(
            score=_similarity(self.distance, operator),
            chunks=tables.chunks,
            inside=inside,
            order=order,
        )
        dense_params = [query, *inside_params, *([] if exact else [query]), depth]
        # BM25 exactly, over the chunks in scope holding an essential term (`_essential`):
        # the slots index finds them, the inner product with the query's IDF scores them.
        weights = self._query_vector(query_idf)
        sparse_sql = sql.SQL(
            "SELECT c.id, -(c.bm25 <#> %s) AS score FROM {chunks} c "
            "WHERE c.slots && %s::integer[] AND {inside} ORDER BY c.bm25 <#> %s, c.id LIMIT %s"
        ).format(chunks=tables.chunks, inside=inside)
        sparse_params = [weights, essential, *inside_params, weights, depth]
        if not self.hybrid:
            ranked, params = (
                (sparse_sql, sparse_params) if self.dense is None else (dense_sql, dense_params)
            )
            statement = sql.SQL(
                "SELECT {columns}, c.id, r.score FROM ({ranked}) r JOIN {chunks} c ON c.id = r.id "
                "ORDER BY r.score DESC, r.id"
            ).format(columns=CHUNK_COLUMNS, ranked=ranked, chunks=tables.chunks)
            return statement, params
        # A hybrid search's candidates, each with its cosine similarity to the query (as
        # the Qdrant store computes it, whatever the collection's distance), its BM25 score
        # and the IDF sum of the query terms it holds.
        slots = [
            (self.slots[term][0], idf) for term, idf in query_idf.items() if term in self.slots
        ]
        statement = sql.SQL(
            "WITH d AS ({dense}), s AS ({sparse}), "
            "candidates AS (SELECT id FROM d UNION SELECT id FROM s) "
            "SELECT {columns}, c.id, c.terms, 1 - (c.embedding <=> %s) AS similarity, "
            "coalesce(-(c.bm25 <#> %s), 0) AS bm25, (SELECT coalesce(sum(q.idf), 0) "
            "FROM unnest(%s::integer[], %s::float8[]) AS q(slot, idf) "
            "WHERE q.slot = ANY(c.slots)) AS held "
            "FROM candidates JOIN {chunks} c ON c.id = candidates.id"
        ).format(dense=dense_sql, sparse=sparse_sql, columns=CHUNK_COLUMNS, chunks=tables.chunks)
        held_params = [[slot for slot, _ in slots], [idf for _, idf in slots]]
        return statement, [*dense_params, *sparse_params, query, weights, *held_params]


def _similarity(distance: str, operator: str) -> sql.Composable:
    """SQL turning pgvector's distance into a score where higher is better (Qdrant's scores)."""
    expression = sql.SQL("(c.embedding {} %s)").format(sql.SQL(operator))
    if distance == "Cosine":
        return sql.SQL("1 - {}").format(expression)
    return sql.SQL("-{}").format(expression)  # <#> is the negated inner product


def tie_break(row: Row) -> tuple[str]:
    """The order of rows judged alike: by chunk id, the Qdrant store's point id."""
    return (str(row["id"]),)


def document_of(row: Row) -> str:
    return str(row[DOCUMENT_ID])
