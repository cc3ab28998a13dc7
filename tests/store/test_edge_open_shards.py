"""Qdrant Edge keeps at most `max_open_collections` shards open: the least recently used close
past the bound, never one in use or with a write in flight, and each loads again when used."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from test_qdrant_edge_memory import edge_collection

from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant.edge import backend
from archivist.testing.store import DIMENSIONS, record, texts, unit


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[QdrantStore]:
    async with QdrantStore(path=tmp_path, max_open_collections=2) as opened:
        for name in "abcd":
            await opened.create_collection(name, DIMENSIONS)
            await opened.insert(name, [record(name, 0)])
        yield opened


async def use(store: QdrantStore, name: str) -> None:
    assert texts(await store.list_chunks(name, name)) == [f"{name}#0"]


def open_shards(store: QdrantStore) -> set[str]:
    """The collections whose engine shard is open now (reaching inside, to ask the backend)."""
    collections = store._engine.backend._collections  # type: ignore[attr-defined]
    return {name for name, collection in collections.items() if collection._shard is not None}


async def test_past_the_bound_the_least_recently_used_shards_close_and_reload(
    tmp_path: Path,
) -> None:
    names = [f"kb{n}" for n in range(5)]
    async with QdrantStore(path=tmp_path, max_open_collections=2) as store:
        for name in names:
            await store.create_collection(name, DIMENSIONS)
            await store.insert(name, [record(name, 0), record(name, 1)])
            assert len(open_shards(store)) <= 2
        assert open_shards(store) == {"kb3", "kb4"}
        for name in names:  # each loads again, with everything written before it closed
            assert texts(await store.list_chunks(name, name)) == [f"{name}#0", f"{name}#1"]
            assert open_shards(store) >= {name} and len(open_shards(store)) == 2
        assert len(await store.search("kb0", unit(0), 5)) == 2
        assert open_shards(store) == {"kb4", "kb0"}
        await store.delete_collection("kb4")
        await store.insert("kb1", [record("kb1", 2)])
        assert open_shards(store) == {"kb0", "kb1"}
    async with QdrantStore(path=tmp_path) as reopened:
        assert len(await reopened.list_chunks("kb1", "kb1")) == 3
        assert not await reopened.has_collection("kb4")


async def test_the_least_recently_used_closes_first(store: QdrantStore) -> None:
    await use(store, "a")
    await use(store, "b")
    await use(store, "a")  # "a" is now more recent than "b"
    await use(store, "c")
    assert open_shards(store) == {"a", "c"}


async def test_a_collection_with_a_write_in_flight_stays_open(store: QdrantStore) -> None:
    await use(store, "a")
    edge_collection(store, "a").busy = 1  # as during `upsert`'s worker-thread write
    await use(store, "b")
    await use(store, "c")
    assert open_shards(store) == {"a", "c"}  # "b" closed in its place
    edge_collection(store, "a").busy = 0
    await use(store, "d")  # the write is over: "a" is the least recently used
    assert open_shards(store) == {"c", "d"}


async def test_the_collection_in_use_stays_open_and_counted(store: QdrantStore) -> None:
    for name in "ab":
        await use(store, name)
        edge_collection(store, name).busy = 1
    await use(store, "c")
    assert open_shards(store) == {"a", "b", "c"}  # over the bound until a write ends
    for name in "ab":
        edge_collection(store, name).busy = 0
    await use(store, "d")
    assert open_shards(store) == {"c", "d"}


async def test_a_write_on_its_worker_thread_keeps_its_shard_open(
    store: QdrantStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, released = threading.Event(), threading.Event()
    kept: list[bool] = []
    write_points = backend._write_points

    def held_write(edge_collection: Any, points: Sequence[Any]) -> None:
        shard = edge_collection._shard
        entered.set()
        released.wait(10)
        kept.append(edge_collection._shard is shard)
        write_points(edge_collection, points)

    monkeypatch.setattr(backend, "_write_points", held_write)
    await use(store, "a")
    writing = asyncio.create_task(store.insert("a", [record("a", 1)]))
    assert await asyncio.to_thread(entered.wait, 10)
    await store.search("b", unit(0), 1)  # past the bound: "a", in the middle of its write
    await store.search("c", unit(0), 1)
    released.set()
    await writing
    assert kept == [True]
    assert texts(await store.list_chunks("a", "a")) == ["a#0", "a#1"]
