"""PgVectorStore on a real PostgreSQL server with pgvector: the shipped conformance suites,
and what only a shared SQL database shows (two store objects, a cut-short replace)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator

import pytest

from archivist.rag import PgVectorStore
from archivist.rag.store.core.generations import new_generation
from archivist.rag.store.pgvector.schema import Tables
from archivist.testing.hybrid_store import HybridSearchTests
from archivist.testing.search_store import GroupingTests, SearchFilterTests
from archivist.testing.store import (
    DIMENSIONS,
    AtomicReplaceTests,
    ChunkListingTests,
    CollectionTests,
    DeclarationTests,
    DenseSearchTests,
    GenerationTests,
    RelevanceTests,
    ReplaceTests,
    ScopedDeleteTests,
    WriteTests,
    batches,
    record,
    texts,
    unit,
)
from pgvector_server import pgvector_server

_prefixes = itertools.count()


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    with pgvector_server() as url:
        yield url


@pytest.fixture
def prefix() -> str:
    """Tables of their own for every test: a fresh table prefix on the shared server."""
    return f"t{next(_prefixes)}"


@pytest.fixture
async def store(pg_url: str, prefix: str) -> AsyncIterator[PgVectorStore]:
    async with PgVectorStore(pg_url, table_prefix=prefix) as opened:
        yield opened


class TestPgVectorStore(
    CollectionTests,
    WriteTests,
    DenseSearchTests,
    ReplaceTests,
    ScopedDeleteTests,
    ChunkListingTests,
    AtomicReplaceTests,
    GenerationTests,
    HybridSearchTests,
    GroupingTests,
    RelevanceTests,
    SearchFilterTests,
    DeclarationTests,
):
    """Every conformance mixin of what the store declares (not diversity) on PostgreSQL."""


class TestPgVectorStoreFloat32(WriteTests, DenseSearchTests, HybridSearchTests, RelevanceTests):
    """The searches again on collections keeping float32 vectors (pgvector's `vector`)."""

    @pytest.fixture
    async def store(self, pg_url: str, prefix: str) -> AsyncIterator[PgVectorStore]:
        async with PgVectorStore(pg_url, table_prefix=prefix, vector_datatype="float32") as opened:
            yield opened


async def _column_and_index(store: PgVectorStore, collection: str) -> tuple[str, str]:
    """The type of a collection's vector column and its HNSW index's definition."""
    tables = Tables.of(store._engine._prefix, collection)
    async with store._engine._open().connection() as connection:
        cursor = await connection.execute(
            "SELECT format_type(a.atttypid, a.atttypmod), pg_get_indexdef(%s::regclass) "
            "FROM pg_attribute a WHERE a.attrelid = %s::regclass AND a.attname = 'embedding'",
            [f"{tables.base}_hnsw", tables.chunks_name],
        )
        row = await cursor.fetchone()
    assert row is not None
    return str(row[0]), str(row[1])


@pytest.mark.parametrize("distance", ["Cosine", "Dot", "Euclid", "Manhattan"])
async def test_collections_keep_the_vector_datatype_they_were_made_with(
    pg_url: str, prefix: str, distance: str
) -> None:
    records = [record(f"d{n}", 0, unit(n % 4, 0.1 * n), total=1, text=f"t{n}") for n in range(8)]
    async with (
        PgVectorStore(pg_url, table_prefix=prefix, distance=distance) as half,
        PgVectorStore(
            pg_url, table_prefix=prefix, distance=distance, vector_datatype="float32"
        ) as full,
    ):
        await half.create_collection("half", DIMENSIONS)
        await full.create_collection("full", DIMENSIONS)
        # Each store writes into the other's collection: the collection's datatype holds.
        await full.insert("half", records)
        await half.insert("full", records)
        column, index = await _column_and_index(full, "half")
        assert column == f"halfvec({DIMENSIONS})" and "halfvec_" in index
        column, index = await _column_and_index(half, "full")
        assert column == f"vector({DIMENSIONS})" and "USING hnsw (embedding vector_" in index
        for query in (unit(1), unit(2, 0.35)):
            by_half = await half.search("half", query, 8)
            by_full = await half.search("full", query, 8)
            assert [h.document_id for h in by_half] == [h.document_id for h in by_full]
            for a, b in zip(by_half, by_full, strict=True):
                assert a.score == pytest.approx(b.score, abs=2e-3)


async def test_two_store_objects_share_one_database(pg_url: str, prefix: str) -> None:
    async with (
        PgVectorStore(pg_url, table_prefix=prefix) as first,
        PgVectorStore(pg_url, table_prefix=prefix) as second,
    ):
        await first.create_collection("docs", DIMENSIONS)
        await first.insert("docs", [record("a", 0, text="pandas eat bamboo", total=1)])
        assert await second.collection_dimensions("docs") == DIMENSIONS
        [hit] = await second.search("docs", None, 3, query_text="bamboo", mode="sparse")
        assert hit.document_id == "a"
        await second.delete_collection("docs")
        assert await first.search("docs", unit(0)) == []
        assert not await first.has_collection("docs")


async def test_a_cut_short_replace_is_found_and_repaired(store: PgVectorStore) -> None:
    await store.create_collection("docs", DIMENSIONS)
    await store.insert("docs", [record("d", n, total=3, text=f"old {n}") for n in range(3)])
    # What a process killed mid-replace leaves: part of a newer generation beside the old one.
    found = await store._require("docs")
    points_source = [record("d", 0, total=2, text="new 0")]
    from archivist.rag.store.core.points import points_for

    points = points_for(points_source, DIMENSIONS, new_generation(), document_id="d")
    await store._write("docs", found, points_source, points)
    generations = await store.document_generations("docs", document_id="d")
    assert [g.chunk_count for g in generations] == [3, 1]
    removed = await store.repair_document("docs", "d")
    assert [g.chunk_count for g in removed] == [1]
    assert texts(await store.list_chunks("docs", "d")) == ["old 0", "old 1", "old 2"]
    hits = await store.search("docs", None, 5, query_text="new", mode="sparse")
    assert hits == []


async def test_replacing_keeps_bm25_statistics_exact(store: PgVectorStore) -> None:
    await store.create_collection("docs", DIMENSIONS)
    for round_ in range(3):
        await store.replace_document(
            "docs", "d", batches([record("d", 0, total=1, text=f"orchid number {round_}")])
        )
    await store.insert("docs", [record("e", 0, total=1, text="forest walk")])
    await store.insert("docs", [record("e", 0, total=1, text="forest walk")])
    async with store._engine._open().connection() as connection:
        cursor = await connection.execute(
            "SELECT sparse_chunks FROM "
            + f"{store._engine._prefix}_collections WHERE name = 'docs'"
        )
        assert await cursor.fetchone() == (2,)
    [hit] = await store.search("docs", None, 5, query_text="orchid", mode="sparse")
    assert hit.chunk.content.text == "orchid number 2"  # type: ignore[union-attr]


async def test_hybrid_ranks_first_the_chunk_both_sides_point_at(pg_url: str, prefix: str) -> None:
    async with PgVectorStore(pg_url, table_prefix=prefix) as store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert(
            "docs",
            [
                record("words", 0, unit(2), total=1, text="kerosene rockets"),
                record("vector", 0, unit(1, 0.3), total=1, text="bread"),
                record("both", 0, unit(1), total=1, text="rockets and bread"),
            ],
        )
        hits = await store.search("docs", unit(1), 3, query_text="rockets bread", mode="hybrid")
        assert hits[0].document_id == "both"


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="url"):
        PgVectorStore("")
    with pytest.raises(ValueError, match="table_prefix"):
        PgVectorStore("postgresql://x", table_prefix="Bad-Name")
    with pytest.raises(ValueError, match="distance"):
        PgVectorStore("postgresql://x", distance="Hamming")
    with pytest.raises(ValueError, match="vector_datatype"):
        PgVectorStore("postgresql://x", vector_datatype="int8")  # type: ignore[arg-type]


async def test_an_unreachable_server_is_a_clear_error() -> None:
    store = PgVectorStore("postgresql://nobody:secret@127.0.0.1:1/none?connect_timeout=2")
    with pytest.raises(ConnectionError, match=r"cannot connect to PostgreSQL at .*\*\*\*@") as info:
        async with store:
            pass
    assert "secret" not in str(info.value)
