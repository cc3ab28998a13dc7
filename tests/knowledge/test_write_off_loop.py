"""A file's hashing and a large write's per-chunk Python (stamping, vector checks, payloads,
BM25 counts) run in worker threads, so the event loop keeps answering while a file is stored;
a write of a few chunks stays on the loop, where its work takes less than the hop to a
thread (`archivist._util.off_loop`)."""

import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from archivist.message import TextBlock
from archivist.rag import ApproxTokenChunker, Chunk, KnowledgeBase, NewDocument, default_registry
from archivist.rag.knowledge import ingest, writing
from archivist.rag.store.core import store as store_core
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant import engine as qdrant_store
from archivist.testing.embedding import HashEmbeddingModel


def _chunk(index: int, total: int) -> Chunk:
    return Chunk(
        content=TextBlock(text=f"chunk {index} of the harbour ledger, tolls and berths"),
        source="ledger.txt",
        chunk_index=index,
        total_chunks=total,
        metadata={"page": index},
    )


@pytest.fixture
def threads_seen(monkeypatch: pytest.MonkeyPatch) -> dict[str, set[bool]]:
    """For each piece of write work, whether it ran on the main (loop) thread."""
    seen: dict[str, set[bool]] = {}

    def spy(name: str, inner: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            on_loop = threading.current_thread() is threading.main_thread()
            seen.setdefault(name, set()).add(on_loop)
            return inner(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(writing, "vector_problem", spy("vector check", writing.vector_problem))
    monkeypatch.setattr(
        writing.DocumentWriter, "_stamped", spy("stamping", writing.DocumentWriter._stamped)
    )
    monkeypatch.setattr(store_core, "points_for", spy("points", store_core.points_for))
    monkeypatch.setattr(qdrant_store, "with_sparse", spy("bm25 vectors", qdrant_store.with_sparse))
    return seen


def _kb(store: QdrantStore) -> KnowledgeBase:
    return KnowledgeBase(
        name="ledger",
        description="ledger",
        embedding_model=HashEmbeddingModel(dimensions=32),
        vector_store=store,
        collection="ledger",
    )


async def test_a_large_list_document_is_prepared_off_the_loop(
    threads_seen: dict[str, set[bool]],
) -> None:
    async with QdrantStore(location=":memory:") as store:
        kb = _kb(store)
        total = 3 * kb.write_batch_size
        await kb.insert_documents([NewDocument([_chunk(i, total) for i in range(total)], "big")])
        assert len(await kb.search("harbour ledger tolls", top_k=5)) == 5
    assert threads_seen == {
        "stamping": {False},
        "vector check": {False},
        "points": {False},
        "bm25 vectors": {False},
    }


async def test_a_streamed_document_is_prepared_off_the_loop(
    threads_seen: dict[str, set[bool]],
) -> None:
    async with QdrantStore(location=":memory:") as store:
        kb = _kb(store)
        total = 2 * kb.write_batch_size + 20  # full batches and a remainder

        async def stream() -> AsyncIterator[Chunk]:
            for index in range(total):
                yield _chunk(index, total)

        await kb.insert_documents([NewDocument(stream(), "streamed")])
        summary = await kb.get_document("streamed")
        assert summary is not None and summary.chunk_count == total
    assert threads_seen["stamping"] == {False}
    assert threads_seen["points"] == {False}


async def test_a_small_document_is_prepared_on_the_loop(
    threads_seen: dict[str, set[bool]],
) -> None:
    async with QdrantStore(location=":memory:") as store:
        kb = _kb(store)
        await kb.insert_documents([NewDocument([_chunk(i, 3) for i in range(3)], "small")])
    assert threads_seen == {
        "stamping": {True},
        "vector check": {True},
        "points": {True},
        "bm25 vectors": {True},
    }


async def test_a_file_is_hashed_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_loop: list[bool] = []
    inner = ingest.file_sha256

    def spy(path: Path) -> str:
        on_loop.append(threading.current_thread() is threading.main_thread())
        return inner(path)

    monkeypatch.setattr(ingest, "file_sha256", spy)
    (tmp_path / "ledger.md").write_text("# Ledger\n\nThe harbour tolls of the year.\n")
    async with QdrantStore(location=":memory:") as store:
        report = await ingest.ingest_files(
            _kb(store),
            [tmp_path / "ledger.md"],
            registry=default_registry(),
            chunker=ApproxTokenChunker(),
        )
    assert [result.outcome for result in report.results] == [ingest.Outcome.INDEXED]
    assert on_loop == [False]


async def test_a_bad_chunk_in_a_streamed_batch_is_named_and_nothing_is_written() -> None:
    async with QdrantStore(location=":memory:") as store:
        kb = _kb(store)
        total = 2 * kb.write_batch_size
        bad = kb.write_batch_size + 6  # in the second batch, stamped in a worker thread

        async def stream() -> AsyncIterator[Chunk]:
            for index in range(total):
                chunk = _chunk(index, total)
                if index == bad:
                    chunk.metadata["when"] = object()
                yield chunk

        await kb.insert_documents([NewDocument([_chunk(i, 3) for i in range(3)], "book")])
        with pytest.raises(ValueError, match=rf"chunks\[{bad}\]\.metadata"):
            await kb.insert_documents([NewDocument(stream(), "book")])
        summary = await kb.get_document("book")
        assert summary is not None and summary.chunk_count == 3  # the old version, whole
