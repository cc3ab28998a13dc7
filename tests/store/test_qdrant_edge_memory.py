"""QdrantStore(location=":memory:") on Qdrant Edge: conformance, index building, cleanup."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import qdrant_edge as edge
from qdrant_cases import QdrantOnlyCases

from archivist.rag.record import VectorRecord
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant.backend import SPARSE_VECTOR
from archivist.rag.store.qdrant.engine import QdrantEngine
from archivist.testing.hybrid_store import DiversityTests, HybridSearchTests
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
    record,
    texts,
    unit,
)

# `store`: the in-memory Qdrant Edge store of the archivist.testing.fixtures plugin.


class TestQdrantEdgeMemory(
    CollectionTests,
    WriteTests,
    DenseSearchTests,
    ReplaceTests,
    ScopedDeleteTests,
    ChunkListingTests,
    AtomicReplaceTests,
    GenerationTests,
    RelevanceTests,
    HybridSearchTests,
    DiversityTests,
    GroupingTests,
    SearchFilterTests,
    DeclarationTests,
    QdrantOnlyCases,
):
    """Every conformance mixin (Qdrant declares every capability) against the in-process
    engine in a temporary directory."""


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


def edge_collection(store: QdrantStore, collection: str) -> Any:
    """The backend's EdgeCollection of `collection` (reaching inside, to ask the engine)."""
    return store._engine.backend._collections[collection]  # type: ignore[attr-defined]


def edge_info(store: QdrantStore, collection: str) -> tuple[int, int]:
    """(points, points with an indexed dense vector) of the collection's shard, as the engine
    counts them (its indexed count includes the BM25 vectors, which are always indexed)."""
    shard = edge_collection(store, collection).shard
    info = shard.info()
    has_sparse = edge.Filter(must=[edge.HasVectorCondition(SPARSE_VECTOR)])
    sparse = shard.count(edge.CountRequest(exact=True, filter=has_sparse))
    return info.points_count, info.indexed_vectors_count - sparse


def segment_versions(store: QdrantStore, collection: str) -> dict[str, int]:
    """Each segment of the collection's shard with its version, from the engine's manifest."""
    manifest = edge_collection(store, collection).shard.snapshot_manifest()
    return {segment: entry["segment_version"] for segment, entry in manifest.items()}


async def test_data_lives_as_long_as_the_store_object() -> None:
    store = QdrantStore(location=":memory:")
    async with store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", [record("a", 0)])
        root = store._engine.backend._root  # type: ignore[attr-defined]
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


@pytest.mark.parametrize("datatype", ["float16", "float32"])
async def test_a_write_that_fills_a_segment_indexes_that_segment_and_no_other(
    datatype: Any,
) -> None:
    """Segments fill at `auto_optimize_threshold` points whatever the vectors' datatype (the
    engine sizes segments in bytes)."""
    vectors = clustered(5_000, 384)
    records = vector_records(vectors, "t")
    options: dict[str, Any] = {"auto_optimize_threshold": 1_000, "vector_datatype": datatype}
    async with QdrantStore(location=":memory:", **options) as store:
        await store.create_collection("big", 384)
        await store.insert("big", records[:900])
        assert edge_info(store, "big") == (900, 0)  # below a segment: searched exactly
        for start in range(900, 3_900, 1_000):
            await store.insert("big", records[start : start + 1_000])
        points, indexed = edge_info(store, "big")
        assert points == 3_900 and indexed >= 3_000
        before = segment_versions(store, "big")
        assert len(before) >= 4

        await store.insert("big", records[3_900:])  # fills the appendable segment again

        after = segment_versions(store, "big")
        kept = {segment for segment, version in before.items() if after.get(segment) == version}
        assert len(kept) == len(before) - 1  # only the segment that filled up was rewritten
        assert edge_info(store, "big")[1] >= indexed + 1_000
        [hit] = await store.search("big", vectors[4_321].tolist(), top_k=1)
        assert (hit.document_id, hit.chunk.chunk_index) == ("t43", 21)


@pytest.mark.heavy  # 24,000 points: a full segment plus some, indexed by optimize()
async def test_optimize_indexes_the_filled_segments_and_keeps_every_point() -> None:
    dimensions = 32  # the default segment of 20,000 points, small enough to build quickly
    vectors = clustered(24_000, dimensions)
    options: dict[str, Any] = {"auto_optimize_threshold": None, "quantization": None}
    async with QdrantStore(location=":memory:", **options) as store:  # float32: graph vs scan
        await store.create_collection("big", dimensions)
        await store.insert("big", vector_records(vectors, "t"))
        before = await store.search("big", vectors[17].tolist(), top_k=3)
        assert edge_info(store, "big") == (24_000, 0)  # no automatic optimization

        await store.optimize("big")

        points, indexed = edge_info(store, "big")
        assert points == 24_000 and indexed >= 20_000
        after = await store.search("big", vectors[17].tolist(), top_k=3)
        assert [hit.chunk for hit in after] == [hit.chunk for hit in before]
        assert after[0].chunk.chunk_index == 17
        assert sum(s.chunk_count for s in await store.list_documents("big")) == 24_000


@pytest.mark.heavy  # the size is the point
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
    assert during >= 2_000 // QdrantEngine.WRITE_BATCH


async def test_other_tasks_run_while_a_write_counts_its_bm25_terms() -> None:
    """The BM25 counting of a write's texts is the write's largest piece of work: it runs
    beside the event loop, which keeps serving other tasks meanwhile."""
    ticks = 0
    seen: list[int] = []

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    prose = " ".join(f"word{n % 97} and text" for n in range(150))
    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
        await store.create_collection("docs", DIMENSIONS)
        encoder = store._encoder(await store._require("docs"))
        count = encoder.count

        def counting(text: str) -> Any:
            seen.append(ticks)
            return count(text)

        encoder.count = counting  # type: ignore[method-assign]
        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0)
        records = [record("d", n, unit(n % DIMENSIONS), text=prose) for n in range(600)]
        await store.insert("docs", records)
        ticker.cancel()
    assert len(seen) == 600
    assert seen[-1] > seen[0]  # the loop ran between the first and the last count


def quantized_segments(store: QdrantStore, collection: str) -> tuple[int, int]:
    """(segments with an HNSW graph, those of them holding int8 copies of the vectors)."""
    manifest = edge_collection(store, collection).shard.snapshot_manifest()
    files = [set(entry["file_versions"]) for entry in manifest.values()]
    indexed = [names for names in files if "vector_index/graph.bin" in names]
    return len(indexed), sum("vector_storage/quantized.data" in names for names in indexed)


@pytest.mark.parametrize("quantization", ["int8", None])
async def test_int8_quantization_is_built_with_each_indexed_segment(
    quantization: Any,
) -> None:
    vectors = clustered(2_500, 384)
    options: dict[str, Any] = {"auto_optimize_threshold": 1_000, "quantization": quantization}
    async with QdrantStore(location=":memory:", **options) as store:
        await store.create_collection("big", 384)
        await store.insert("big", vector_records(vectors, "t"))
        indexed, quantized = quantized_segments(store, "big")
        assert indexed == 2
        assert quantized == (2 if quantization else 0)
        for n in (12, 1_234, 2_222):  # originals rescore the candidates: exact top hit
            [hit] = await store.search("big", vectors[n].tolist(), top_k=1)
            assert (hit.document_id, hit.chunk.chunk_index) == (f"t{n // 100}", n % 100)
