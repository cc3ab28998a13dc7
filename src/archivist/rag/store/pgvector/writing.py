"""How `PgVectorStore` writes and deletes chunks in SQL, keeping each term's document frequency
and the collection's BM25 totals exact."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
from pgvector import SparseVector
from psycopg import AsyncConnection, sql
from psycopg.types.json import Jsonb

from archivist.rag.store.core.bm25 import Bm25Encoder, Bm25Stats, TermCounts
from archivist.rag.store.core.layout import (
    CHUNK_INDEX,
    CONTENT,
    DOCUMENT_ID,
    GENERATION,
    METADATA,
    SOURCE,
    TOTAL_CHUNKS,
)
from archivist.rag.store.core.points import PointWrite
from archivist.rag.store.pgvector.schema import SLOT_DIMENSIONS, Collection, vector_value

COPY_COLUMNS = (
    ("id", "uuid"),
    ("document_id", "text"),
    ("generation", "text"),
    ("chunk_index", "int4"),
    ("total_chunks", "int4"),
    ("source", "text"),
    ("content", "text"),
    ("metadata", "jsonb"),
    ("terms", "int4"),
    ("embedding", "vector"),  # the collection's vector type (`Collection.vector_type`)
    ("slots", "int4[]"),
    ("bm25", "sparsevec"),
)
"""The chunk table's columns as a write copies them in (binary COPY), with their types."""


async def write_chunks(
    connection: AsyncConnection[Any],
    registry: sql.Identifier,
    collection: str,
    found: Collection,
    points: list[PointWrite],
    counts: Sequence[TermCounts | None],
    *,
    overwrites: bool = True,
) -> None:
    """Store `points` (replacing any with the same ids, unless `overwrites` is False) with
    the BM25 weights of their term `counts`, keeping document frequencies and BM25 totals
    exact; inside the caller's transaction, holding the collection's write lock."""
    tables = found.tables
    if overwrites:  # a replace's ids are new: nothing to take off first
        ids = [point.id for point in points]
        await delete_where(
            connection, registry, collection, found, sql.SQL("c.id = ANY(%s::uuid[])"), [ids]
        )
    counted = [terms if terms is not None and terms.length else None for terms in counts]
    weights = await _bm25_weights(connection, registry, collection, found, counted)
    columns = sql.SQL(", ").join(sql.Identifier(name) for name, _ in COPY_COLUMNS)
    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(tables.chunks, columns)
    async with connection.cursor().copy(statement) as copy:
        copy.set_types(
            [found.vector_type if name == "embedding" else kind for name, kind in COPY_COLUMNS]
        )
        for point, terms, bm25 in zip(points, counted, weights, strict=True):
            await copy.write_row(
                (
                    uuid.UUID(point.id),
                    point.payload[DOCUMENT_ID],
                    point.payload[GENERATION],
                    point.payload[CHUNK_INDEX],
                    point.payload[TOTAL_CHUNKS],
                    point.payload[SOURCE],
                    point.payload[CONTENT],
                    Jsonb(point.payload[METADATA]),
                    0 if terms is None else terms.length,
                    vector_value(found.datatype, point.vector),
                    None if bm25 is None else sorted(bm25),
                    None if bm25 is None else SparseVector(bm25, SLOT_DIMENSIONS),
                )
            )


async def _bm25_weights(
    connection: AsyncConnection[Any],
    registry: sql.Identifier,
    collection: str,
    found: Collection,
    counts: list[TermCounts | None],
) -> list[dict[int, float] | None]:
    """Each chunk's BM25 weights by term slot (None for a chunk without terms), at the
    collection's average length once these chunks are counted in; counts every term's
    document frequency and the collection's totals in, and gives new terms their slots."""
    counted = [terms for terms in counts if terms is not None]
    if not counted:
        return [None] * len(counts)
    cursor = await connection.execute(
        sql.SQL(
            "UPDATE {} SET sparse_chunks = sparse_chunks + %s, sparse_tokens = sparse_tokens + %s "
            "WHERE name = %s RETURNING sparse_chunks, sparse_tokens"
        ).format(registry),
        [len(counted), sum(terms.length for terms in counted), collection],
    )
    row = await cursor.fetchone()
    # The totals with this batch counted in: the average `average_after` gives.
    stats = Bm25Stats(tokens=int(row[1]), chunks=int(row[0])) if row else Bm25Stats()
    average = stats.average_after([])
    vectors = [None if terms is None else Bm25Encoder.document(terms, average) for terms in counts]
    held = [vector for vector in vectors if vector]
    term_ids = np.fromiter((term for vector in held for term in vector.indices), dtype=np.int64)
    values = np.fromiter((value for vector in held for value in vector.values), dtype=np.float32)
    # Each term's document frequency and weight bound in this batch, summed up here: the
    # statement gets one row a term, its arrays as text (one string, not a list dumped).
    terms, where, df = np.unique(term_ids, return_inverse=True, return_counts=True)
    bound = np.zeros(len(terms), dtype=np.float32)
    np.maximum.at(bound, where, values)
    cursor = await connection.execute(
        sql.SQL(
            "INSERT INTO {0} AS d (term, df, weight_bound) "
            "SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::real[]) ORDER BY 1 "
            "ON CONFLICT (term) DO UPDATE SET df = d.df + excluded.df, "
            "weight_bound = greatest(d.weight_bound, excluded.weight_bound) "
            "RETURNING term, slot"
        ).format(found.tables.df),
        [_array_text(terms), _array_text(df), _array_text(bound)],
    )
    slots = {int(term): int(slot) for term, slot in await cursor.fetchall()}
    return [
        None
        if vector is None
        else {slots[term]: value for term, value in zip(vector.indices, vector.values, strict=True)}
        for vector in vectors
    ]


def _array_text(values: np.ndarray) -> str:
    """`values` as a PostgreSQL array literal."""
    return "{" + ",".join(map(str, values.tolist())) + "}"


async def delete_where(
    connection: AsyncConnection[Any],
    registry: sql.Identifier,
    collection: str,
    found: Collection,
    condition: sql.Composable,
    params: Sequence[Any],
) -> None:
    """Delete the chunks (alias `c`) matching `condition`, keeping document frequencies and
    BM25 totals exact; inside the caller's transaction, holding the collection's lock."""
    tables = found.tables
    if found.sparse:
        await connection.execute(
            sql.SQL(
                "UPDATE {df} SET df = {df}.df - gone.n FROM ("
                "SELECT s.slot, count(*) AS n FROM {chunks} c, unnest(c.slots) AS s(slot) "
                "WHERE {condition} GROUP BY s.slot) AS gone WHERE {df}.slot = gone.slot"
            ).format(df=tables.df, chunks=tables.chunks, condition=condition),
            params,
        )
    cursor = await connection.execute(
        sql.SQL(
            "WITH gone AS (DELETE FROM {chunks} c WHERE {condition} RETURNING c.terms) "
            "SELECT count(*) FILTER (WHERE terms > 0), coalesce(sum(terms), 0) FROM gone"
        ).format(chunks=tables.chunks, condition=condition),
        params,
    )
    row = await cursor.fetchone()
    if found.sparse and row is not None and row[0]:
        await connection.execute(
            sql.SQL(
                "UPDATE {} SET sparse_chunks = sparse_chunks - %s, "
                "sparse_tokens = sparse_tokens - %s WHERE name = %s"
            ).format(registry),
            [int(row[0]), int(row[1]), collection],
        )
