"""PgVectorStore's bulk load: its HNSW graphs dropped while the load writes (searches exact
meanwhile), built once at its end or by the next optimize after a load cut short."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest

from archivist.rag import PgVectorStore
from archivist.rag.record import VectorRecord
from archivist.rag.store.pgvector.schema import Tables
from archivist.testing.store import record
from pgvector_server import fresh_database, pgvector_server

DIMENSIONS = 24


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with pgvector_server() as url:
        yield url


def _vectors(count: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, DIMENSIONS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _records(vectors: np.ndarray, start: int = 0) -> list[VectorRecord]:
    """Chunk n alone in document "dn", of tenant "small" every fourth, "big" otherwise."""
    tenants = ["big" if n % 4 else "small" for n in range(start, start + len(vectors))]
    return [
        record(f"d{n}", 0, vector.tolist(), total=1, text=f"chunk {n}", tenant_id=tenant)
        for n, (vector, tenant) in enumerate(zip(vectors, tenants, strict=True), start)
    ]


def _graphs(url: str, prefix: str) -> dict[str, int]:
    """The HNSW indexes of the tables under `prefix`, with the scans each served."""
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("SELECT pg_stat_clear_snapshot()")
        rows = connection.execute(
            "SELECT s.indexrelname, s.idx_scan FROM pg_stat_user_indexes s "
            "JOIN pg_class i ON i.oid = s.indexrelid JOIN pg_am a ON a.oid = i.relam "
            "WHERE a.amname = 'hnsw' AND s.relname LIKE %s",
            [f"{prefix}\\_%"],
        ).fetchall()
    return {str(name): int(scans) for name, scans in rows}


def _shared(prefix: str) -> str:
    return f"{Tables.of(prefix, 'docs').base}_hnsw"


async def _exact_top(store: PgVectorStore, vectors: np.ndarray, queries: np.ndarray) -> None:
    """Every query's top 5, unfiltered and within tenant "big", is the exact top 5."""
    big = np.array([n % 4 != 0 for n in range(len(vectors))])
    for query in queries:
        scores = vectors @ query
        for scope, mask in ((None, None), ({"tenant_id": "big"}, big)):
            ranked = np.argsort(-(scores if mask is None else np.where(mask, scores, -np.inf)))
            hits = await store.search("docs", query.tolist(), 5, scope)
            assert [hit.document_id for hit in hits] == [f"d{n}" for n in ranked[:5]]


async def test_searches_stay_exact_during_a_bulk_load_and_walk_the_graph_after_it(
    pg_url: str,
) -> None:
    url = fresh_database(pg_url, "bulk")
    with psycopg.connect(url, autocommit=True) as connection:  # the index where it may serve
        connection.execute("ALTER DATABASE bulk SET enable_seqscan = off")
        connection.execute("ALTER DATABASE bulk SET enable_bitmapscan = off")
    vectors, queries = _vectors(1_200, 1), _vectors(8, 2)
    async with PgVectorStore(url, table_prefix="bulk") as store:
        store._engine.EXACT_BELOW = 400  # type: ignore[attr-defined]
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", _records(vectors[:600]))
        await store.optimize("docs")
        assert len(_graphs(url, "bulk")) == 2  # the shared graph and tenant "big"'s
        async with store.bulk_load("docs"):
            assert _graphs(url, "bulk") == {}
            await _exact_top(store, vectors[:600], queries)
            await store.insert("docs", _records(vectors[600:], 600))
            await _exact_top(store, vectors, queries)
            [hit] = await store.search("docs", None, 1, query_text="chunk 700", mode="sparse")
            assert hit.document_id == "d700"
        graphs = _graphs(url, "bulk")
        assert _shared("bulk") in graphs
        assert len(graphs) == 2
        await _exact_top(store, vectors, queries)
    # A backend publishes its statistics when it ends: the store's connections are closed.
    for _ in range(100):
        if _graphs(url, "bulk")[_shared("bulk")] >= len(queries):
            break
        await asyncio.sleep(0.1)
    assert _graphs(url, "bulk")[_shared("bulk")] >= len(queries)


async def test_a_load_cut_short_is_ended_by_the_next_optimize(pg_url: str) -> None:
    vectors, queries = _vectors(300, 3), _vectors(4, 4)
    async with PgVectorStore(pg_url, table_prefix="crash") as store:
        await store.create_collection("docs", DIMENSIONS)
        await store.begin_bulk_load("docs")
        await store.insert("docs", _records(vectors))
    # The process died before its end: reopened, the collection is searched exactly.
    async with PgVectorStore(pg_url, table_prefix="crash") as store:
        assert _graphs(pg_url, "crash") == {}
        await _exact_top(store, vectors, queries)
        await store.optimize("docs")
        assert set(_graphs(pg_url, "crash")) == {_shared("crash")}
        await store.optimize("docs")  # nothing left to build
        await _exact_top(store, vectors, queries)


async def test_a_failed_load_is_ended_and_a_cancelled_one_left_to_optimize(pg_url: str) -> None:
    vectors, queries = _vectors(200, 7), _vectors(4, 8)
    async with PgVectorStore(pg_url, table_prefix="cut") as store:
        await store.create_collection("docs", DIMENSIONS)
        with pytest.raises(ValueError, match="the block's own"):
            async with store.bulk_load("docs"):
                await store.insert("docs", _records(vectors[:100]))
                raise ValueError("the block's own error")
        assert set(_graphs(pg_url, "cut")) == {_shared("cut")}

        async def load() -> None:
            async with store.bulk_load("docs"):
                await store.insert("docs", _records(vectors[100:], 100))
                await asyncio.sleep(60)

        task = asyncio.create_task(load())
        for _ in range(200):
            if len(await store.list_documents("docs")) == 200:
                break
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert _graphs(pg_url, "cut") == {}  # no build on the way out
        await _exact_top(store, vectors, queries)
        await store.optimize("docs")
        assert set(_graphs(pg_url, "cut")) == {_shared("cut")}


async def test_two_processes_loading_one_collection_both_end_well(pg_url: str) -> None:
    vectors = _vectors(400, 5)
    async with (
        PgVectorStore(pg_url, table_prefix="pair") as first,
        PgVectorStore(pg_url, table_prefix="pair") as second,
    ):
        await first.create_collection("docs", DIMENSIONS)
        await asyncio.gather(first.begin_bulk_load("docs"), second.begin_bulk_load("docs"))
        await asyncio.gather(
            first.insert("docs", _records(vectors[:200])),
            second.insert("docs", _records(vectors[200:], 200)),
        )
        await asyncio.gather(first.end_bulk_load("docs"), second.end_bulk_load("docs"))
        assert set(_graphs(pg_url, "pair")) == {_shared("pair")}
        assert len(await first.list_documents("docs")) == 400


async def test_a_bulk_load_of_a_missing_collection_is_refused(pg_url: str) -> None:
    async with PgVectorStore(pg_url, table_prefix="none") as store:
        with pytest.raises(ValueError, match="does not exist"):
            await store.begin_bulk_load("docs")


async def test_a_build_the_shared_memory_cannot_hold_runs_without_workers(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archivist.rag.store.pgvector import engine

    tried: list[int] = []
    build = engine.build_shared_graph

    async def small_shm(*args: Any, workers: int, **kwargs: Any) -> None:
        tried.append(workers)
        if workers:  # as PostgreSQL fails a parallel build /dev/shm cannot hold
            raise psycopg.errors.DiskFull("could not resize shared memory segment")
        await build(*args, workers=workers, **kwargs)

    monkeypatch.setattr(engine, "build_shared_graph", small_shm)
    async with PgVectorStore(pg_url, table_prefix="shm") as store:
        await store.create_collection("docs", DIMENSIONS)
        async with store.bulk_load("docs"):
            await store.insert("docs", _records(_vectors(50, 6)))
    assert tried == [2, 0]
    assert set(_graphs(pg_url, "shm")) == {_shared("shm")}
