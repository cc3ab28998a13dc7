"""QdrantStore(path=...) on Qdrant Edge: conformance, persistence across reopening, locking."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_cases import QdrantOnlyCases
from test_qdrant_edge_memory import clustered, edge_info, vector_records

from archivist.rag.store.file_lock import StoreLockedError
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant.edge import collection as collection_module
from archivist.rag.store.qdrant.edge.collection import EdgeCollection
from archivist.testing.fixtures import entered_store
from archivist.testing.hybrid_store import DiversityTests, HybridSearchTests
from archivist.testing.store import (
    DIMENSIONS,
    AtomicReplaceTests,
    GenerationTests,
    VectorStoreConformance,
    batches,
    record,
    texts,
    unit,
)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[QdrantStore]:
    async with entered_store("edge-path", tmp_path) as opened:
        yield opened


class TestQdrantEdgePath(
    VectorStoreConformance,
    AtomicReplaceTests,
    GenerationTests,
    HybridSearchTests,
    DiversityTests,
    QdrantOnlyCases,
):
    """The conformance mixins that touch the disk against the engine persisting under a
    directory; the search-only ones (grouping, filters, relevance) run on `:memory:`, the same
    engine."""


def search_threads(expected: int) -> int:
    """The engine's search-pool threads alive in this process (Linux names them), once there
    are `expected` or 5 s have passed: a closed shard's pool threads end on their own."""
    deadline = time.monotonic() + 5
    while True:
        gc.collect()  # shards of dropped stores stop their pools when collected
        tasks = Path("/proc/self/task").iterdir()
        count = sum((task / "comm").read_text().startswith("edge-search") for task in tasks)
        if count == expected or time.monotonic() > deadline:
            return count
        time.sleep(0.01)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="threads listed in /proc")
async def test_each_open_collection_searches_on_the_threads_it_was_given(tmp_path: Path) -> None:
    before = search_threads(0)
    async with QdrantStore(path=tmp_path, search_threads=2) as store:
        for name in ("a", "b"):
            await store.create_collection(name, DIMENSIONS)
            await store.insert(name, [record("d", 0)])
        assert search_threads(before + 4) == before + 4
    del store
    assert search_threads(before) == before
    for asked, expected in ((3, 6), (None, 2)):  # by default, one thread per collection
        async with QdrantStore(path=tmp_path, search_threads=asked) as reopened:
            for name in ("a", "b"):  # loaded from disk on first use, with the pool asked for
                assert texts(await reopened.list_chunks(name, "d")) == ["d#0"]
            assert search_threads(before + expected) == before + expected
        del reopened


async def test_data_indexes_and_shape_survive_reopening(tmp_path: Path) -> None:
    async with QdrantStore(path=tmp_path, distance="Euclid") as store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", [record("a", n, unit(n), tenant="t") for n in range(3)])
        await store.replace_document(
            "docs", "b", batches([record("b", 0, unit(1), tenant="t")]), {"tenant": "t"}
        )
    async with QdrantStore(path=tmp_path) as store:
        assert await store.has_collection("docs")
        assert await store.collection_dimensions("docs") == DIMENSIONS
        assert texts(await store.list_chunks("docs", "a")) == ["a#0", "a#1", "a#2"]
        [hit] = await store.search("docs", unit(1), top_k=1, metadata_filter={"tenant": "t"})
        assert hit.score == pytest.approx(0.0, abs=1e-6)  # Euclid kept: a distance of 0, negated
        await store.insert("docs", [record("c", 0)])
    meta = json.loads((tmp_path / "collections" / "docs" / "meta.json").read_text())
    assert meta["dimensions"] == DIMENSIONS and meta["distance"] == "Euclid"
    assert meta["indexes"]['metadata."tenant"'] == "keyword"
    assert {"document_id", "generation", "chunk_index"} <= set(meta["indexes"])


async def test_deleted_collection_stays_deleted_after_reopening(tmp_path: Path) -> None:
    async with QdrantStore(path=tmp_path) as store:
        await store.create_collection("gone", DIMENSIONS)
        await store.create_collection("kept", DIMENSIONS)
        await store.delete_collection("gone")
    async with QdrantStore(path=tmp_path) as store:
        assert not await store.has_collection("gone")
        assert await store.has_collection("kept")
    assert sorted(p.name for p in (tmp_path / "collections").iterdir()) == ["kept"]


async def test_a_second_process_cannot_open_an_open_store(tmp_path: Path) -> None:
    opener = (
        "import asyncio, sys\n"
        "from archivist.rag.store.qdrant import QdrantStore, StoreLockedError\n"
        "async def main():\n"
        "    try:\n"
        "        async with QdrantStore(path=sys.argv[1]):\n"
        "            print('opened')\n"
        "    except StoreLockedError as error:\n"
        "        print(error)\n"
        "asyncio.run(main())\n"
    )

    def open_elsewhere() -> str:
        done = subprocess.run(
            [sys.executable, "-c", opener, str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    async with QdrantStore(path=tmp_path):
        assert open_elsewhere() == f"store at {tmp_path} is locked by PID {os.getpid()}"
    assert open_elsewhere() == "opened"


async def test_a_second_store_in_the_same_process_is_refused_too(tmp_path: Path) -> None:
    async with QdrantStore(path=tmp_path):
        with pytest.raises(StoreLockedError, match=str(os.getpid())):
            async with QdrantStore(path=tmp_path):
                pass
    assert issubclass(StoreLockedError, RuntimeError)


async def test_leftovers_of_an_interrupted_index_build_are_removed(tmp_path: Path) -> None:
    async with QdrantStore(path=tmp_path) as store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", [record("a", 0)])
    collection_dir = tmp_path / "collections" / "docs"
    live = json.loads((collection_dir / "meta.json").read_text())["shard"]
    (collection_dir / "shard-interrupted").mkdir()
    async with QdrantStore(path=tmp_path) as store:
        assert len(await store.list_chunks("docs", "a")) == 1
    assert sorted(p.name for p in collection_dir.iterdir()) == sorted(["meta.json", live])


async def test_an_optimized_collection_reopens_from_its_new_shard(tmp_path: Path) -> None:
    async with QdrantStore(path=tmp_path) as store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", [record("a", n, unit(n % DIMENSIONS)) for n in range(50)])
        await store.optimize("docs")
        await store.insert("docs", [record("b", 0)])
    async with QdrantStore(path=tmp_path) as store:
        counts = {s.document_id: s.chunk_count for s in await store.list_documents("docs")}
        assert counts == {"a": 50, "b": 1}
    shards = [
        p for p in (tmp_path / "collections" / "docs").iterdir() if p.name.startswith("shard-")
    ]
    assert len(shards) == 1


async def test_a_collection_reopened_takes_the_segment_size_it_is_opened_with(
    tmp_path: Path,
) -> None:
    vectors = clustered(1_500, 384)
    records = vector_records(vectors, "t")
    async with QdrantStore(path=tmp_path, auto_optimize_threshold=None) as store:
        await store.create_collection("docs", 384)
        await store.insert("docs", records[:-1])
        assert edge_info(store, "docs") == (1_499, 0)
    async with QdrantStore(path=tmp_path, auto_optimize_threshold=1_000) as store:
        await store.insert("docs", records[-1:])  # the segment is over 1,000 points: indexed
        assert edge_info(store, "docs") == (1_500, 1_500)


def wal_bytes(store: QdrantStore, collection: str) -> int:
    """Bytes in the write-ahead log of `collection`'s live shard."""
    shard = store._engine.backend._get(collection).shard_dir  # type: ignore[attr-defined]
    return sum(f.stat().st_size for f in (shard / "wal").iterdir())


async def test_the_write_ahead_log_stays_short_however_much_is_written(tmp_path: Path) -> None:
    # The engine truncates its log only on a flush; the store flushes after indexing a segment.
    blob = "x" * 16_384  # metadata, so the log grows fast while BM25 has little to count
    async with QdrantStore(path=tmp_path, auto_optimize_threshold=200) as store:
        await store.create_collection("docs", DIMENSIONS)
        sizes = []
        for batch in range(40):  # 8,000 points, about 130 MB through the log
            await store.insert(
                "docs", [record(f"d{batch}", n, unit(n % 4), blob=blob) for n in range(200)]
            )
            sizes.append(wal_bytes(store, "docs"))
    # Flat once the first segments were indexed: a few of the engine's 32 MiB log files, where
    # unflushed it grew by one every tenth batch (to 160 MiB here).
    assert sizes[-1] <= sizes[len(sizes) // 2] + 2**16 <= 3 * 32 * 2**20 + 2**17
    async with QdrantStore(path=tmp_path) as store:  # what the log no longer holds is on disk
        counts = {s.document_id: s.chunk_count for s in await store.list_documents("docs")}
        assert counts == {f"d{batch}": 200 for batch in range(40)}


async def test_points_are_written_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building a batch's points is Python work as long as the engine's: the loop answers
    other requests meanwhile only if it happens in a worker thread."""
    writers: set[int] = set()
    apply = EdgeCollection.apply

    def recording(self: EdgeCollection, operation: Any) -> None:
        writers.add(threading.get_ident())
        apply(self, operation)

    monkeypatch.setattr(EdgeCollection, "apply", recording)
    async with QdrantStore(path=tmp_path) as store:
        await store.create_collection("docs", DIMENSIONS)
        writers.clear()
        await store.insert(
            "docs", [record("a", n, unit(n % DIMENSIONS), total=200) for n in range(200)]
        )
        assert writers and threading.get_ident() not in writers
        assert len(await store.list_chunks("docs", "a", limit=500)) == 200


async def test_a_cancelled_write_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancelled insert deletes what it wrote; a batch still being applied in the worker
    thread must land before that clean-up runs, or it would be left behind."""
    started = threading.Event()
    apply = EdgeCollection.apply

    def slow_first(self: EdgeCollection, operation: Any) -> None:
        if not started.is_set():
            started.set()
            time.sleep(0.3)
        apply(self, operation)

    async with QdrantStore(path=tmp_path) as store:
        await store.create_collection("docs", DIMENSIONS)
        monkeypatch.setattr(EdgeCollection, "apply", slow_first)
        writing = asyncio.create_task(store.insert("docs", [record("a", 0, unit(0), total=1)]))
        await asyncio.to_thread(started.wait, 5)
        writing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await writing
        await asyncio.sleep(0.5)  # a write still running in its thread would land by now
        assert await store.list_chunks("docs", "a") == []


async def test_bm25_totals_are_saved_with_a_flush_not_with_every_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved: list[tuple[int, int]] = []
    save_meta = collection_module.save_meta

    def recording(directory: Path, meta: Any) -> None:
        saved.append((meta.bm25_tokens, meta.bm25_chunks))
        save_meta(directory, meta)

    monkeypatch.setattr(collection_module, "save_meta", recording)
    async with QdrantStore(path=tmp_path) as store:
        await store.create_collection("docs", DIMENSIONS)
        for n in range(20):
            words = " ".join(["word"] * (n + 1))
            await store.replace_document(
                "docs", f"d{n}", batches([record(f"d{n}", 0, total=1, text=words)])
            )
        assert saved == []
    assert saved == [(sum(range(1, 21)), 20)]  # saved once, when the store closed
    meta = json.loads((tmp_path / "collections" / "docs" / "meta.json").read_text())
    assert (meta["bm25_tokens"], meta["bm25_chunks"]) == (210, 20)
    async with QdrantStore(path=tmp_path) as store:  # the reopened store goes on from them
        await store.replace_document(
            "docs", "d20", batches([record("d20", 0, total=1, text="word word")])
        )
    assert saved[-1] == (212, 21)


def stored_vector(store: QdrantStore, collection: str) -> list[float]:
    """The dense vector of the collection's one point, as the engine keeps it."""
    import qdrant_edge as edge

    shard = store._engine.backend._collections[collection].shard  # type: ignore[attr-defined]
    [point], _ = shard.scroll(edge.ScrollRequest(limit=2, with_vector=True))
    vector = point.vector
    return list(vector[""] if isinstance(vector, dict) else vector)


def meta_file(root: Path, collection: str) -> Path:
    return root / "collections" / collection / "meta.json"


@pytest.mark.parametrize(("datatype", "other"), [("float16", "float32"), ("float32", "float16")])
async def test_a_collection_keeps_the_vector_datatype_it_was_created_with(
    tmp_path: Path, datatype: Any, other: Any
) -> None:
    lean = unit(0, 0.1)
    norm = sum(x * x for x in lean) ** 0.5

    def check(stored: list[float]) -> None:
        assert stored == pytest.approx([x / norm for x in lean], abs=1e-3)
        as_half = np.asarray(stored, dtype=np.float16).astype(np.float32).tolist()
        assert (as_half == stored) == (datatype == "float16"), stored

    async with QdrantStore(path=tmp_path, vector_datatype=datatype) as store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", [record("a", 0, lean)])
        check(stored_vector(store, "docs"))
    assert json.loads(meta_file(tmp_path, "docs").read_text())["datatype"] == datatype
    async with QdrantStore(path=tmp_path, vector_datatype=other) as store:
        await store.optimize("docs")  # rebuilds the shard from the collection's own meta
        check(stored_vector(store, "docs"))
        [hit] = await store.search("docs", lean, top_k=1)
        assert hit.document_id == "a"


async def test_a_collection_from_before_datatypes_is_read_as_float32(tmp_path: Path) -> None:
    async with QdrantStore(path=tmp_path, vector_datatype="float32") as store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", [record("a", 0, unit(0, 0.1))])
    meta = json.loads(meta_file(tmp_path, "docs").read_text())
    del meta["datatype"]
    meta_file(tmp_path, "docs").write_text(json.dumps(meta))
    async with QdrantStore(path=tmp_path) as store:  # float16 for new collections
        await store.insert("docs", [record("b", 0, unit(1))])
        await store.optimize("docs")
        counts = {s.document_id: s.chunk_count for s in await store.list_documents("docs")}
        assert counts == {"a": 1, "b": 1}
    assert json.loads(meta_file(tmp_path, "docs").read_text())["datatype"] == "float32"


async def test_an_unknown_vector_datatype_on_disk_is_named_with_its_file(tmp_path: Path) -> None:
    async with QdrantStore(path=tmp_path) as store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", [record("a", 0)])
    meta = json.loads(meta_file(tmp_path, "docs").read_text())
    meta_file(tmp_path, "docs").write_text(json.dumps({**meta, "datatype": "bfloat16"}))
    with pytest.raises(RuntimeError, match=r"meta\.json.*unknown vector datatype 'bfloat16'"):
        async with QdrantStore(path=tmp_path) as store:
            await store.list_documents("docs")
