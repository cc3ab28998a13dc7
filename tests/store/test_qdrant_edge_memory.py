"""QdrantStore(location=":memory:") on Qdrant Edge: conformance, index building, cleanup."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
from qdrant_cases import QdrantOnlyCases

from archivist.rag.record import VectorRecord
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.hybrid_store import DiversitySearchConformance, HybridSearchConformance
from archivist.testing.search_store import GroupingConformance, SearchFilterConformance
from archivist.testing.store import DIMENSIONS, VectorStoreConformance, record, texts, unit


@pytest.fixture
async def store() -> AsyncIterator[QdrantStore]:
    async with QdrantStore(location=":memory:") as opened:
        yield opened


class TestQdrantEdgeMemory(
    VectorStoreConformance,
    HybridSearchConformance,
    DiversitySearchConformance,
    GroupingConformance,
    SearchFilterConformance,
    QdrantOnlyCases,
):
    """Every conformance test against the in-process engine in a temporary directory."""


def clustered(count: int, dimensions: int, seed: int = 7) -> np.ndarray:
    """`count` vectors around 50 centres, shaped like text embeddings rather than noise."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, dimensions))
    points = centres[rng.integers(0, 50, count)] + 0.3 * rng.standard_normal((count, dimensions))
    return points.astype(np.float32)


def vector_records(vectors: np.ndarray, prefix: str, per_document: int = 100) -> list[VectorRecord]:
    return [
        record(f"{prefix}{n // per_document}", n % per_document, vector.tolist(), tenant=prefix)
        for n, vector in enumerate(vectors)
    ]


def edge_info(store: QdrantStore, collection: str) -> tuple[int, int]:
    """(points, points with an indexed dense vector) of the collection's live shard."""
    edge_collection = store._engine._collections[collection]  # type: ignore[attr-defined]
    points = edge_collection.shard.info().points_count
    return points, points - edge_collection.unindexed()


async def test_data_lives_as_long_as_the_store_object() -> None:
    store = QdrantStore(location=":memory:")
    async with store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", [record("a", 0)])
        root = store._engine._root  # type: ignore[attr-defined]
    async with store:  # the seed's samples enter the same store again and expect the data
        assert texts(await store.list_chunks("docs", "a")) == ["a#0"]
    assert isinstance(root, Path) and (root / "collections" / "docs").is_dir()
    del store
    gc.collect()
    assert not root.exists()


async def test_two_memory_stores_do_not_share_data() -> None:
    async with (
        QdrantStore(location=":memory:") as first,
        QdrantStore(location=":memory:") as second,
    ):
        await first.create_collection("docs", DIMENSIONS)
        assert not await second.has_collection("docs")


async def test_using_a_store_outside_async_with_fails_clearly() -> None:
    store = QdrantStore(location=":memory:")
    with pytest.raises(RuntimeError, match="async with"):
        await store.create_collection("docs", DIMENSIONS)
    async with store:
        await store.create_collection("docs", DIMENSIONS)
    with pytest.raises(RuntimeError, match="async with"):
        await store.search("docs", unit(0))


async def test_optimize_builds_the_index_and_keeps_every_point() -> None:
    vectors = clustered(8_000, 384)
    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
        await store.create_collection("big", 384)
        await store.insert("big", vector_records(vectors, "t"))
        before = await store.search("big", vectors[17].tolist(), top_k=3)
        assert edge_info(store, "big") == (8_000, 0)

        await store.optimize("big")

        assert edge_info(store, "big") == (8_000, 8_000)
        after = await store.search("big", vectors[17].tolist(), top_k=3)
        assert [hit.chunk for hit in after] == [hit.chunk for hit in before]
        assert after[0].chunk.chunk_index == 17
        assert sum(s.chunk_count for s in await store.list_documents("big")) == 8_000


async def building_started(store: QdrantStore, collection: str) -> None:
    """Return once the child process works on its copy of the shard."""
    edge_collection = store._engine._collections[collection]  # type: ignore[attr-defined]
    while edge_collection.recording_done.is_set():
        await asyncio.sleep(0.01)


async def test_reads_and_writes_go_on_while_the_index_is_built() -> None:
    vectors = clustered(8_000, 384)
    late = vector_records(clustered(300, 384, seed=8), "late")
    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
        await store.create_collection("big", 384)
        await store.insert("big", vector_records(vectors, "t"))
        building = asyncio.create_task(store.optimize("big"))
        await building_started(store, "big")

        await store.insert("big", late)
        await store.delete("big", "t0")
        [hit] = await store.search("big", vectors[150].tolist(), top_k=1)
        assert (hit.document_id, hit.chunk.chunk_index) == ("t1", 50)
        collection = store._engine._collections["big"]  # type: ignore[attr-defined]
        assert collection.recorded_points == len(late)
        ticks = 0
        while not building.done():
            ticks += 1
            await asyncio.sleep(0.01)
        await building

        assert ticks > 0  # the event loop kept running while the index was built
        assert edge_info(store, "big")[1] > 0
        counts = {s.document_id: s.chunk_count for s in await store.list_documents("big")}
        assert "t0" not in counts
        assert counts["late0"] == 100 and counts["late2"] == 100
        assert sum(counts.values()) == 8_000 - 100 + 300


async def test_enough_unindexed_points_start_an_index_build_by_themselves() -> None:
    vectors = clustered(8_000, 384)
    async with QdrantStore(location=":memory:", auto_optimize_threshold=7_000) as store:
        await store.create_collection("big", 384)
        records = vector_records(vectors, "t")
        await store.insert("big", records[:6_000])
        collection = store._engine._collections["big"]  # type: ignore[attr-defined]
        assert collection.optimization is None
        await store.insert("big", records[6_000:])
        assert collection.optimization is not None
        await collection.optimization
        points, indexed = edge_info(store, "big")
        assert points == 8_000 and indexed >= 7_000


async def test_closing_the_store_stops_a_running_build() -> None:
    vectors = clustered(8_000, 384)
    store = QdrantStore(location=":memory:", auto_optimize_threshold=None)
    async with store:
        await store.create_collection("big", 384)
        await store.insert("big", vector_records(vectors, "t"))
        building = asyncio.create_task(store.optimize("big"))
        await building_started(store, "big")
    with pytest.raises(asyncio.CancelledError):
        await building


async def test_list_documents_is_exact_over_a_hundred_thousand_points() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((100_000, DIMENSIONS)).astype(np.float32)
    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
        await store.create_collection("many", DIMENSIONS)
        for start in range(0, 100_000, 10_000):
            batch = [
                record(f"doc{n % 2500}", n // 2500, vectors[n].tolist(), tenant=f"t{n % 2}")
                for n in range(start, start + 10_000)
            ]
            await store.insert("many", batch)
        summaries = await store.list_documents("many")
        assert len(summaries) == 2500
        assert all(summary.chunk_count == 40 for summary in summaries)
        tenant = await store.list_documents("many", {"tenant": "t1"})
        assert len(tenant) == 1250 and all(s.metadata == {"tenant": "t1"} for s in tenant)
        assert [c.chunk_index for c in await store.list_chunks("many", "doc7", 35, 10)] == [
            35,
            36,
            37,
            38,
            39,
        ]


async def test_a_bulk_insert_lets_other_tasks_run_between_its_batches() -> None:
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
        await store.create_collection("docs", DIMENSIONS)
        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0)
        before = ticks
        await store.insert("docs", [record("d", n, unit(n % DIMENSIONS)) for n in range(2_000)])
        during = ticks - before
        ticker.cancel()
    assert during >= 2_000 // QdrantStore.WRITE_BATCH
