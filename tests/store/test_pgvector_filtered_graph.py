"""A filtered dense search through PgVectorStore's HNSW graph: its candidate list widens as
the share of the collection in scope shrinks, so a tenant's best chunks are found."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from archivist.errors import InvalidArgumentError
from archivist.message import TextBlock
from archivist.rag import PgVectorStore
from archivist.rag.document import Chunk
from archivist.rag.record import VectorRecord
from archivist.rag.store.pgvector.filter import where_metadata
from archivist.rag.store.pgvector.schema import Tables
from archivist.rag.store.pgvector.search import MAX_EF_SEARCH, Limits, SearchPlan
from pgvector_server import fresh_database, pgvector_server

DIMENSIONS = 48
CHUNKS = 6_000
TENANT_SHARE = 0.02


def test_the_candidate_list_grows_as_the_share_in_scope_shrinks() -> None:
    limits = Limits(hybrid_depth=50, ef_search=100, exact_below=10_000, candidates_per_result=6)
    assert limits.ef_for(5, 1.0) == 100  # no filter: the floor
    assert limits.ef_for(50, 1.0) == 300  # a deeper search looks wider
    assert limits.ef_for(5, 0.1) == 300
    assert limits.ef_for(5, 0.05) == 600
    assert limits.ef_for(5, 0.001) == MAX_EF_SEARCH  # pgvector's bound
    assert limits.ef_for(5, 0.0) == MAX_EF_SEARCH


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with pgvector_server() as url:
        yield url


def _records(vectors: np.ndarray, tenants: list[str]) -> list[VectorRecord]:
    return [
        VectorRecord(
            vector=vector.tolist(),
            document_id=f"d{n}",
            chunk=Chunk(
                content=TextBlock(text=f"chunk {n}"),
                source=f"d{n}.txt",
                chunk_index=0,
                total_chunks=1,
                metadata={"tenant_id": tenant},
            ),
        )
        for n, (vector, tenant) in enumerate(zip(vectors, tenants, strict=True))
    ]


async def _recall(url: str, prefix: str) -> float:
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((CHUNKS, DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    small = rng.random(CHUNKS) < TENANT_SHARE
    tenants = ["small" if flag else "large" for flag in small]
    queries = rng.standard_normal((30, DIMENSIONS)).astype(np.float32)
    found = 0
    async with PgVectorStore(url, table_prefix=prefix, tenant_key=None) as store:
        store._engine.EXACT_BELOW = 1  # every filtered search walks the one graph
        await store.create_collection("docs", DIMENSIONS)
        records = _records(vectors, tenants)
        for start in range(0, CHUNKS, 1_000):
            await store.insert("docs", records[start : start + 1_000])
        await store.optimize("docs")  # the planner learns the table's size
        for query in queries:
            scores = np.where(small, vectors @ query, -np.inf)
            exact = {f"d{n}" for n in np.argsort(-scores)[:5]}
            hits = await store.search("docs", query.tolist(), 5, {"tenant_id": "small"})
            found += len(exact & {hit.document_id for hit in hits})
    return found / (5 * len(queries))


async def test_a_small_tenant_finds_its_best_chunks_through_the_graph(pg_url: str) -> None:
    assert await _recall(pg_url, "graph") >= 0.98


async def test_the_list_widens_by_the_share_a_filter_holds(pg_url: str) -> None:
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((2_000, DIMENSIONS)).astype(np.float32)
    tenants = ["tenth" if n % 10 == 0 else "rest" for n in range(2_000)]
    async with PgVectorStore(pg_url, table_prefix="share") as store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", _records(vectors, tenants))
        await store.optimize("docs")  # the planner's row count: 2,000

        async def breadth(tenant: str | None, exact_below: int = 100) -> int | None:
            scope = where_metadata(None if tenant is None else {"tenant_id": tenant})
            shape = await store._engine.shape("docs")
            assert shape is not None
            limits = Limits(50, 100, exact_below, 6)
            plan = SearchPlan(
                store._engine._open(),
                store._engine._registry,
                "docs",
                shape.tables,
                "Cosine",
                shape.datatype,
                [0.0] * DIMENSIONS,
                None,
                *scope,
                limits,
            )
            async with plan.pool.connection() as connection:
                return await plan.graph_breadth(connection, 5)

        assert await breadth(None) == 100
        # The count stops at `exact_below`: the share is at least what it reached.
        assert await breadth("rest", exact_below=1_000) == 100  # half or more: the floor
        assert await breadth("rest") == 600  # 1 in 20 or more: 6 x 5 x 20
        assert await breadth("tenth", exact_below=200) == 300  # 1 in 10: 6 x 5 x 10
        assert await breadth("tenth", exact_below=201) is None  # 200 in scope: ranked exactly
        assert await breadth("nobody") is None


def _index_scans(url: str, prefix: str) -> dict[str, int]:
    """Each index of the tables under `prefix`: how many scans it served."""
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("SELECT pg_stat_clear_snapshot()")
        rows = connection.execute(
            "SELECT indexrelname, idx_scan FROM pg_stat_user_indexes WHERE relname LIKE %s",
            [f"{prefix}\\_%"],
        ).fetchall()
    return {str(name): int(scans) for name, scans in rows}


async def test_a_large_tenant_gets_a_graph_of_its_own_which_its_searches_walk(
    pg_url: str,
) -> None:
    import asyncio

    rng = np.random.default_rng(9)
    vectors = rng.standard_normal((1_200, DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    tenants = ["big" if n % 4 else "small" for n in range(1_200)]  # 900 and 300
    # A table this small is read whole where it may be: here the planner picks an index.
    url = fresh_database(pg_url, "graphs")
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("ALTER DATABASE graphs SET enable_seqscan = off")
        connection.execute("ALTER DATABASE graphs SET enable_bitmapscan = off")
    async with PgVectorStore(url, table_prefix="graphs") as store:
        store._engine.EXACT_BELOW = 500
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", _records(vectors, tenants))
        await store.optimize("docs")
        await store.optimize("docs")  # nothing more to build
        graphs = {name for name in _index_scans(url, "graphs") if "_tg_" in name}
        assert len(graphs) == 1  # "big" alone holds 500 or more
        [graph] = graphs
        before = _index_scans(url, "graphs")[graph]
        big = np.array([tenant == "big" for tenant in tenants])
        # Enough searches for psycopg to prepare the statement and the server to plan it once
        # for any tenant, unless told to plan each for its own.
        for query in rng.standard_normal((14, DIMENSIONS)).astype(np.float32):
            exact = {f"d{n}" for n in np.argsort(-np.where(big, vectors @ query, -np.inf))[:5]}
            hits = await store.search("docs", query.tolist(), 5, {"tenant_id": "big"})
            assert {hit.document_id for hit in hits} == exact
    # A backend publishes its statistics when it ends: the store's connections are closed.
    for _ in range(100):
        if _index_scans(url, "graphs")[graph] >= before + 14:
            break
        await asyncio.sleep(0.1)
    assert _index_scans(url, "graphs")[graph] >= before + 14


async def test_no_tenant_graphs_without_a_tenant_key(pg_url: str) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((600, DIMENSIONS)).astype(np.float32)
    async with PgVectorStore(pg_url, table_prefix="keyless", tenant_key=None) as store:
        store._engine.EXACT_BELOW = 100
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", _records(vectors, ["big"] * 600))
        await store.optimize("docs")
    assert not [name for name in _index_scans(pg_url, "keyless") if "_tg_" in name]


def test_a_bad_tenant_key_is_named() -> None:
    with pytest.raises(InvalidArgumentError, match="tenant_key"):
        PgVectorStore("postgresql://localhost/x", tenant_key="")


async def test_a_collection_written_without_tenant_graphs_gets_them_at_its_next_optimize(
    pg_url: str,
) -> None:
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((700, DIMENSIONS)).astype(np.float32)
    tenants = ["big"] * 600 + ["small"] * 100
    async with PgVectorStore(pg_url, table_prefix="older", tenant_key=None) as store:
        await store.create_collection("docs", DIMENSIONS)  # as stores before graphs wrote it
        await store.insert("docs", _records(vectors, tenants))
        await store.optimize("docs")
    assert not [name for name in _index_scans(pg_url, "older") if "_tg_" in name]
    async with PgVectorStore(pg_url, table_prefix="older") as store:
        store._engine.EXACT_BELOW = 500
        hits = await store.search("docs", vectors[3].tolist(), 3, {"tenant_id": "big"})
        assert hits[0].document_id == "d3"
        await store.optimize("docs")
        assert len([name for name in _index_scans(pg_url, "older") if "_tg_" in name]) == 1
        hits = await store.search("docs", vectors[650].tolist(), 3, {"tenant_id": "small"})
        assert hits[0].document_id == "d650"


async def test_graphs_another_process_is_building_are_left_to_it(pg_url: str) -> None:
    rng = np.random.default_rng(8)
    vectors = rng.standard_normal((300, DIMENSIONS)).astype(np.float32)
    table = Tables.of("busy", "docs").chunks_name
    async with PgVectorStore(pg_url, table_prefix="busy") as store:
        store._engine.EXACT_BELOW = 200
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", _records(vectors, ["big"] * 300))
        with psycopg.connect(pg_url, autocommit=True) as other:  # another optimize under way
            other.execute(
                "SELECT pg_advisory_lock(hashtextextended(%s, 0))",
                [f"archivist-tenant-graphs\x1f{table}"],
            )
            await store.optimize("docs")
            assert not [name for name in _index_scans(pg_url, "busy") if "_tg_" in name]
        await store.optimize("docs")  # its lock ended with its session
        assert len([name for name in _index_scans(pg_url, "busy") if "_tg_" in name]) == 1


async def test_a_large_tenant_gets_a_term_index_of_its_own_which_its_term_lookups_use(
    pg_url: str,
) -> None:
    import asyncio

    rng = np.random.default_rng(11)
    words = [f"w{n}" for n in range(40)]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(3, 9)))) for _ in range(1_200)]
    vectors = rng.standard_normal((1_200, DIMENSIONS)).astype(np.float32)
    tenants = ["big" if n % 4 else "small" for n in range(1_200)]
    records = [
        record.model_copy(update={"chunk": record.chunk.model_copy(update={"content": text})})
        for record, text in zip(
            _records(vectors, tenants), [TextBlock(text=t) for t in texts], strict=True
        )
    ]
    queries = [" ".join(rng.choice(words, size=3)) for _ in range(14)]
    url = fresh_database(pg_url, "terms")
    found: dict[str, list[list[tuple[str, float]]]] = {}
    for prefix, key in (("plain", None), ("own", "tenant_id")):
        async with PgVectorStore(url, table_prefix=prefix, tenant_key=key) as store:
            store._engine.EXACT_BELOW = 500
            await store.create_collection("docs", DIMENSIONS)
            await store.insert("docs", records)
            await store.optimize("docs")
            found[prefix] = []
            for n, query in enumerate(queries):
                for mode in ("sparse", "hybrid"):
                    hits = await store.search(
                        "docs", vectors[n].tolist(), 5, {"tenant_id": "big"},
                        query_text=query, mode=mode,  # type: ignore[arg-type]
                    )
                    found[prefix].append([(h.document_id, round(h.score, 5)) for h in hits])
    assert found["own"] == found["plain"]  # the same results, through the tenant's own index
    own = {name: scans for name, scans in _index_scans(url, "own").items() if "_tt_" in name}
    assert len(own) == 1  # "big" alone holds 500 or more
    assert not [name for name in _index_scans(url, "plain") if "_tt_" in name]
    # A backend publishes its statistics when it ends: the store's connections are closed.
    for _ in range(100):
        if sum(_index_scans(url, "own")[name] for name in own) >= 28:
            break
        await asyncio.sleep(0.1)
    assert sum(_index_scans(url, "own")[name] for name in own) >= 28
