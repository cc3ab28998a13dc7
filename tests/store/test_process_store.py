"""ProcessStore: QdrantStore on disk run in a child process passes the same conformance suite,
and the child's faults and the caller's cancellations surface as they should."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from archivist.errors import InvalidArgumentError
from archivist.rag.record import VectorRecord
from archivist.rag.store.base import STORE_METHODS, VectorStoreBase
from archivist.rag.store.file_lock import StoreLockedError
from archivist.rag.store.process import ProcessStore, StoreProcessError
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.hybrid_store import DiversityTests, HybridSearchTests
from archivist.testing.search_store import SearchFilterTests
from archivist.testing.store import (
    DIMENSIONS,
    AtomicReplaceTests,
    GenerationTests,
    VectorStoreConformance,
    batches,
    record,
    texts,
)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ProcessStore]:
    async with ProcessStore.of(QdrantStore, path=tmp_path / "store") as opened:
        yield opened


class TestProcessStore(
    VectorStoreConformance,
    AtomicReplaceTests,
    GenerationTests,
    HybridSearchTests,
    DiversityTests,
    SearchFilterTests,
):
    """Everything QdrantStore on disk offers, answered by its child process."""


def child_pid(store: ProcessStore) -> int:
    process = store._process
    assert process is not None and process.returncode is None
    return process.pid


async def test_it_declares_its_stores_capabilities_and_refuses_to_nest() -> None:
    made = ProcessStore.of(QdrantStore, location=":memory:")
    assert made.capabilities == QdrantStore.capabilities
    assert type(made) is type(ProcessStore.of(QdrantStore))  # one class per store class
    with pytest.raises(TypeError, match="already runs"):
        ProcessStore.of(type(made))
    with pytest.raises(TypeError, match="ProcessStore.of"):
        ProcessStore({})


async def test_the_stores_own_errors_raise_here_as_raised_there(store: ProcessStore) -> None:
    with pytest.raises(InvalidArgumentError, match="collection"):
        await store.create_collection("bad/name", DIMENSIONS)
    with pytest.raises(ValueError, match="missing"):
        await store.insert("missing", [record("a", 0)])
    assert await store.has_collection("missing") is False  # the child goes on answering


async def test_a_failing_batch_source_raises_its_own_error_and_keeps_the_old_version(
    store: ProcessStore,
) -> None:
    class SourceBroke(Exception):
        pass

    await store.create_collection("docs", DIMENSIONS)
    await store.replace_document("docs", "a", batches([record("a", 0)]))

    async def failing() -> AsyncIterator[list[VectorRecord]]:
        yield [record("a", 0, text="new")]
        raise SourceBroke("the embedder failed")

    with pytest.raises(SourceBroke, match="embedder"):
        await store.replace_document("docs", "a", failing())
    assert texts(await store.list_chunks("docs", "a")) == ["a#0"]


async def test_a_cancelled_call_is_cancelled_in_the_child(store: ProcessStore) -> None:
    await store.create_collection("docs", DIMENSIONS)
    await store.replace_document("docs", "a", batches([record("a", 0)]))
    asked = asyncio.Event()

    async def endless() -> AsyncIterator[list[VectorRecord]]:
        yield [record("a", 0, text="half")]
        asked.set()
        await asyncio.sleep(3600)
        yield []

    writing = asyncio.create_task(store.replace_document("docs", "a", endless()))
    await asyncio.wait_for(asked.wait(), 30)
    writing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await writing
    await store.delete("docs", "a")  # waits for the child's replace to unwind, then deletes
    assert await store.list_documents("docs") == []
    assert await store.document_generations("docs") == []


async def test_a_dead_child_fails_its_calls_and_the_next_call_starts_another(
    tmp_path: Path,
) -> None:
    async with ProcessStore.of(QdrantStore, path=tmp_path / "store") as store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", [record("a", 0)])
        first = child_pid(store)
        os.kill(first, signal.SIGKILL)
        with pytest.raises(StoreProcessError, match="SIGKILL"):
            for _ in range(200):  # until the caller has seen the child end
                await store.has_collection("docs")
                await asyncio.sleep(0.01)
        assert texts(await store.list_chunks("docs", "a")) == ["a#0"]  # what was written stays
        assert child_pid(store) != first


async def test_a_held_directory_raises_the_lock_error_and_closing_ends_the_child(
    tmp_path: Path,
) -> None:
    async with ProcessStore.of(QdrantStore, path=tmp_path / "store") as store:
        pid = child_pid(store)
        with pytest.raises(StoreLockedError):
            await ProcessStore.of(QdrantStore, path=tmp_path / "store").__aenter__()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(StoreProcessError, match="closed"):
        await store.has_collection("docs")
    async with QdrantStore(path=tmp_path / "store") as reopened:  # the lock went with the child
        assert await reopened.has_collection("docs") is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
async def test_the_child_dies_with_its_caller_and_frees_the_directory(tmp_path: Path) -> None:
    caller = (
        "import asyncio, sys\n"
        "from archivist.rag.store.process import ProcessStore\n"
        "from archivist.rag.store.qdrant import QdrantStore\n"
        "async def main():\n"
        "    async with ProcessStore.of(QdrantStore, path=sys.argv[1]) as store:\n"
        "        await store.create_collection('docs', 4)\n"
        "        print(store._process.pid, flush=True)\n"
        "        await asyncio.sleep(3600)\n"
        "asyncio.run(main())\n"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", caller, str(tmp_path / "store"), stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    child = int(await asyncio.wait_for(process.stdout.readline(), 60))
    os.kill(child, signal.SIGSTOP)  # busy as in a long engine call: it cannot see its stdin end
    try:
        process.kill()
        await process.wait()
        for _ in range(500):
            try:
                async with QdrantStore(path=tmp_path / "store") as reopened:  # no orphan holds it
                    assert await reopened.has_collection("docs")
                break
            except StoreLockedError:
                await asyncio.sleep(0.01)
        else:
            raise AssertionError("the store process outlived its caller, holding the directory")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def test_it_forwards_the_whole_contract_declared_once() -> None:
    public = {
        name
        for name, value in vars(VectorStoreBase).items()
        if not name.startswith("_") and inspect.iscoroutinefunction(value)
    }
    assert set(STORE_METHODS) == public
    made = type(ProcessStore.of(QdrantStore))
    assert not made.__abstractmethods__
    for name in STORE_METHODS:
        assert name in vars(ProcessStore)
        assert inspect.signature(getattr(made, name)) == inspect.signature(
            getattr(VectorStoreBase, name)
        )
