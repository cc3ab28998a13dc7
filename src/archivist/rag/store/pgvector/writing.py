"""How `PgVectorStore` writes and deletes chunks in SQL, keeping each term's document frequency
and the collection's BM25 totals exact."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
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
from archivist.rag.store.pgvector.schema import Collection


async def write_chunks(
    connection: AsyncConnection[Any],
    registry: sql.Identifier,
    collection: str,
    found: Collection,
    points: list[PointWrite],
    counts: list[TermCounts | None],
    *,
    overwrites: bool = True,
) -> None:
    """Store `points` (replacing any with the same ids, unless `overwrites` is False) with
    the BM25 postings of their term `counts`, keeping document frequencies and BM25 totals
    exact; inside the caller's transaction, holding the collection's write lock."""
    tables = found.tables
    if overwrites:  # a replace's ids are new: nothing to take off first
        ids = [point.id for point in points]
        await delete_where(
            connection, registry, collection, found, sql.SQL("c.id = ANY(%s::uuid[])"), [ids]
        )
    lengths = [0 if terms is None else terms.length for terms in counts]
    async with connection.cursor() as cursor:
        await cursor.executemany(
            sql.SQL(
                "INSERT INTO {} (id, document_id, generation, chunk_index, total_chunks, "
                "source, content, metadata, terms, embedding) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
            ).format(tables.chunks),
            [
                (
                    point.id,
                    point.payload[DOCUMENT_ID],
                    point.payload[GENERATION],
                    point.payload[CHUNK_INDEX],
                    point.payload[TOTAL_CHUNKS],
                    point.payload[SOURCE],
                    point.payload[CONTENT],
                    Jsonb(point.payload[METADATA]),
                    length,
                    np.asarray(point.vector, dtype=np.float32),
                )
                for point, length in zip(points, lengths, strict=True)
            ],
        )
    counted = [(point.id, terms) for point, terms in zip(points, counts, strict=True) if terms]
    counted = [(point_id, terms) for point_id, terms in counted if terms.length]
    if not counted:
        return
    cursor = await connection.execute(
        sql.SQL("SELECT sparse_chunks, sparse_tokens FROM {} WHERE name = %s").format(registry),
        [collection],
    )
    row = await cursor.fetchone()
    stats = Bm25Stats(tokens=int(row[1]), chunks=int(row[0])) if row else Bm25Stats()
    average = stats.average_after([terms for _, terms in counted])
    term_ids: list[int] = []
    chunk_ids: list[str] = []
    weights: list[float] = []
    for point_id, terms in counted:
        vector = Bm25Encoder.document(terms, average)
        term_ids.extend(vector.indices)
        chunk_ids.extend([point_id] * len(vector.indices))
        weights.extend(vector.values)
    await connection.execute(
        sql.SQL(
            "INSERT INTO {} (term, chunk, weight) "
            "SELECT * FROM unnest(%s::bigint[], %s::uuid[], %s::real[])"
        ).format(tables.terms),
        [term_ids, chunk_ids, weights],
    )
    await connection.execute(
        sql.SQL(
            "INSERT INTO {0} (term, df) SELECT term, count(*) FROM unnest(%s::bigint[]) "
            "AS t(term) GROUP BY term ORDER BY term "
            "ON CONFLICT (term) DO UPDATE SET df = {0}.df + excluded.df"
        ).format(tables.df),
        [term_ids],
    )
    await connection.execute(
        sql.SQL(
            "UPDATE {} SET sparse_chunks = sparse_chunks + %s, "
            "sparse_tokens = sparse_tokens + %s WHERE name = %s"
        ).format(registry),
        [len(counted), sum(terms.length for _, terms in counted), collection],
    )


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
                "SELECT t.term, count(*) AS n FROM {terms} t JOIN {chunks} c ON c.id = t.chunk "
                "WHERE {condition} GROUP BY t.term) AS gone WHERE {df}.term = gone.term"
            ).format(df=tables.df, terms=tables.terms, chunks=tables.chunks, condition=condition),
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
