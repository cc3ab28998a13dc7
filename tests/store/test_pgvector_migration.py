"""A collection written by the storage of earlier versions (BM25 postings in a table of their
own) is converted when a store first opens it, and then reads, searches and counts as one
written by this version."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from psycopg import AsyncConnection, sql
from psycopg.types.json import Jsonb

from archivist.rag import PgVectorStore
from archivist.rag.store.core.bm25 import Bm25Encoder, Bm25Stats
from archivist.rag.store.core.generations import new_generation
from archivist.rag.store.core.layout import (
    CHUNK_INDEX,
    CONTENT,
    DOCUMENT_ID,
    GENERATION,
    METADATA,
    SOURCE,
    TOTAL_CHUNKS,
)
from archivist.rag.store.core.points import points_for, term_counts
from archivist.rag.store.core.terms import TERM_LAYOUT
from archivist.rag.store.pgvector.schema import Tables
from archivist.testing.store import DIMENSIONS, record, texts, unit
from pgvector_server import pgvector_server

_prefixes = itertools.count()

RECORDS = [
    record("a", 0, unit(0), total=2, text="pandas eat bamboo in the forest", tenant_id="t1"),
    record("a", 1, unit(1), total=2, text="bamboo grows fast, 91 cm a day", tenant_id="t1"),
    record("b", 0, unit(2), total=1, text="red pandas eat bamboo too", tenant_id="t2"),
    record("c", 0, unit(1, 0.4), total=1, text="forest fires and bamboo flowers", tenant_id="t1"),
    record("d", 0, unit(3), total=1, text="kerosene rockets", tenant_id="t2"),
]

# The tables of the earlier storage, as its DDL created them.
OLD_REGISTRY = """CREATE TABLE {registry} (
    name text PRIMARY KEY,
    dimensions integer NOT NULL,
    distance text NOT NULL,
    sparse boolean NOT NULL,
    sparse_chunks bigint NOT NULL DEFAULT 0,
    sparse_tokens bigint NOT NULL DEFAULT 0,
    term_layout integer NOT NULL DEFAULT 1
)"""
OLD_COLLECTION = [
    """CREATE TABLE {chunks} (
        id uuid PRIMARY KEY,
        document_id text NOT NULL,
        generation text NOT NULL,
        chunk_index integer NOT NULL,
        total_chunks integer NOT NULL,
        source text NOT NULL,
        content text NOT NULL,
        metadata jsonb NOT NULL,
        terms integer NOT NULL DEFAULT 0,
        embedding vector({dimensions}) NOT NULL
    )""",
    "ALTER TABLE {chunks} ALTER COLUMN embedding SET STORAGE MAIN",
    "CREATE INDEX {doc} ON {chunks} (document_id, chunk_index)",
    "CREATE INDEX {gen} ON {chunks} (generation)",
    "CREATE INDEX {meta} ON {chunks} USING gin (metadata jsonb_path_ops)",
    "CREATE INDEX {hnsw} ON {chunks} USING hnsw (embedding vector_cosine_ops) "
    "WITH (m = 16, ef_construction = 100)",
    """CREATE TABLE {terms} (
        term bigint NOT NULL,
        chunk uuid NOT NULL REFERENCES {chunks} (id) ON DELETE CASCADE,
        weight real NOT NULL,
        PRIMARY KEY (term, chunk)
    )""",
    "CREATE INDEX {terms_chunk} ON {terms} (chunk)",
    "CREATE TABLE {df} (term bigint PRIMARY KEY, df bigint NOT NULL)",
]


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with pgvector_server() as url:
        yield url


async def _write_old(url: str, prefix: str) -> None:
    """Collection "docs" of `RECORDS` under `prefix`, in the earlier storage, written as its
    write path did: chunk rows, postings of BM25 weights at the running average length,
    document frequencies and totals."""
    tables = Tables.of(prefix, "docs")
    names = {
        suffix: sql.Identifier(f"{tables.base}_{suffix}")
        for suffix in ("chunks", "doc", "gen", "meta", "hnsw", "terms", "terms_chunk", "df")
    }
    registry = sql.Identifier(f"{prefix}_collections")
    encoder = Bm25Encoder()
    points = points_for(RECORDS, DIMENSIONS, new_generation())
    counts = [counted for counted in term_counts(encoder, RECORDS) if counted is not None]
    average = Bm25Stats().average_after(counts)
    async with await AsyncConnection.connect(url, autocommit=True) as connection:
        await connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await connection.execute(sql.SQL(OLD_REGISTRY).format(registry=registry))
        for statement in OLD_COLLECTION:
            await connection.execute(
                sql.SQL(statement).format(dimensions=sql.Literal(DIMENSIONS), **names)
            )
        await connection.execute(
            sql.SQL(
                "INSERT INTO {} (name, dimensions, distance, sparse, sparse_chunks, "
                "sparse_tokens, term_layout) VALUES ('docs', %s, 'Cosine', true, %s, %s, %s)"
            ).format(registry),
            [DIMENSIONS, len(counts), sum(c.length for c in counts), TERM_LAYOUT],
        )
        df: dict[int, int] = {}
        for point, terms in zip(points, counts, strict=True):
            payload: dict[str, Any] = point.payload
            await connection.execute(
                sql.SQL(
                    "INSERT INTO {} (id, document_id, generation, chunk_index, total_chunks, "
                    "source, content, metadata, terms, embedding) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector)"
                ).format(names["chunks"]),
                [
                    point.id,
                    payload[DOCUMENT_ID],
                    payload[GENERATION],
                    payload[CHUNK_INDEX],
                    payload[TOTAL_CHUNKS],
                    payload[SOURCE],
                    payload[CONTENT],
                    Jsonb(payload[METADATA]),
                    terms.length,
                    str(point.vector),
                ],
            )
            vector = Bm25Encoder.document(terms, average)
            await connection.execute(
                sql.SQL(
                    "INSERT INTO {} (term, chunk, weight) "
                    "SELECT term, %s, weight FROM unnest(%s::bigint[], %s::real[]) AS t(term, weight)"
                ).format(names["terms"]),
                [point.id, vector.indices, vector.values],
            )
            for term in vector.indices:
                df[term] = df.get(term, 0) + 1
        await connection.execute(
            sql.SQL(
                "INSERT INTO {} (term, df) SELECT * FROM unnest(%s::bigint[], %s::bigint[])"
            ).format(names["df"]),
            [list(df), list(df.values())],
        )


async def _searches(store: PgVectorStore) -> list[list[tuple[str, int, float]]]:
    """What a set of searches finds: (document, chunk index, score) of each hit, hits of the
    same score in document order (ties go by chunk id, which differ between collections)."""
    found = []
    for mode, vector, query, where in (
        ("sparse", None, "bamboo forest", None),
        ("sparse", None, "pandas 91", {"tenant_id": "t1"}),
        ("hybrid", unit(1), "bamboo forest", None),
        ("hybrid", unit(2), "pandas rockets", {"tenant_id": "t2"}),
        ("dense", unit(1), None, {"tenant_id": "t1"}),
    ):
        hits = await store.search(
            "docs", vector, 5, query_text=query, mode=mode, metadata_filter=where
        )
        found.append(
            sorted(
                ((hit.document_id, hit.chunk.chunk_index, hit.score) for hit in hits),
                key=lambda hit: (-hit[2], hit[0], hit[1]),
            )
        )
    return found


async def _df(store: PgVectorStore) -> tuple[dict[int, int], tuple[int, int]]:
    """The collection's document frequencies (of the terms still held) and BM25 totals."""
    tables = Tables.of(store._engine._prefix, "docs")
    async with store._engine._open().connection() as connection:
        cursor = await connection.execute(
            sql.SQL("SELECT term, df FROM {} WHERE df > 0").format(tables.df)
        )
        df = {int(term): int(count) for term, count in await cursor.fetchall()}
        cursor = await connection.execute(
            sql.SQL("SELECT sparse_chunks, sparse_tokens FROM {} WHERE name = 'docs'").format(
                store._engine._registry
            )
        )
        row = await cursor.fetchone()
    assert row is not None
    return df, (int(row[0]), int(row[1]))


async def test_an_old_collection_is_converted_and_searches_the_same(pg_url: str) -> None:
    old, fresh = f"old{next(_prefixes)}", f"new{next(_prefixes)}"
    await _write_old(pg_url, old)
    async with (
        PgVectorStore(pg_url, table_prefix=old) as migrated,
        # The old collection keeps its float32 vectors: compared with a float32 one.
        PgVectorStore(pg_url, table_prefix=fresh, vector_datatype="float32") as written,
    ):
        await written.create_collection("docs", DIMENSIONS)
        await written.insert("docs", RECORDS)
        assert await migrated.has_collection("docs")
        async with migrated._engine._open().connection() as connection:
            cursor = await connection.execute(
                "SELECT to_regclass(%s), storage, datatype FROM "
                + f"{old}_collections WHERE name = 'docs'",
                [f"{Tables.of(old, 'docs').base}_terms"],
            )
            # Postings gone, storage current, vectors as they were written.
            assert await cursor.fetchone() == (None, 2, "float32")
        assert await _searches(migrated) == await _searches(written)
        assert await _df(migrated) == await _df(written)
        assert texts(await migrated.list_chunks("docs", "a")) == [
            "pandas eat bamboo in the forest",
            "bamboo grows fast, 91 cm a day",
        ]
        # Writes and deletes after the conversion keep the counts exact.
        for store in (migrated, written):
            await store.delete("docs", document_id="b")
            await store.insert("docs", [record("e", 0, unit(2), total=1, text="bamboo shoots")])
        assert await _df(migrated) == await _df(written)
        assert await _searches(migrated) == await _searches(written)


async def test_a_second_store_finds_the_collection_converted(pg_url: str) -> None:
    old = f"old{next(_prefixes)}"
    await _write_old(pg_url, old)
    async with (
        PgVectorStore(pg_url, table_prefix=old) as first,
        PgVectorStore(pg_url, table_prefix=old) as second,
    ):
        one, two = await _searches(first), await _searches(second)
        assert one == two
        assert one[0]  # the sparse search finds bamboo
