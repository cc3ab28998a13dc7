"""A collection keeps the term layout it was indexed with: an old one is written and searched
by its own rules (numbers are not terms there), says so, and never mixes in new terms."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from archivist.message import TextBlock
from archivist.rag import KnowledgeBase
from archivist.rag.document import Chunk
from archivist.rag.store.base import VectorStoreBase
from archivist.rag.store.core.terms import TERM_LAYOUT
from archivist.testing.embedding import HashEmbeddingModel
from archivist.testing.store import DIMENSIONS, record, unit

PORTS = {
    "p8731": "The staging gateway listens on port 8731.",
    "p8732": "The staging gateway listens on port 8732.",
}

Aged = Callable[[], Awaitable[None]]
"""Turns the store's collection "docs" into one indexed before numbers were terms."""


async def _old_edge(tmp_path: Path) -> AsyncIterator[tuple[VectorStoreBase, Aged]]:
    from archivist.rag.store.qdrant import QdrantStore
    from archivist.rag.store.qdrant.edge.meta import META_FILE, load_meta

    async with QdrantStore(path=tmp_path / "store") as store:

        async def aged() -> None:
            collection = store._engine.backend._collections["docs"]  # type: ignore[attr-defined]
            path = collection.directory / META_FILE
            raw = json.loads(path.read_text())
            del raw["term_layout"]  # as the meta file of an earlier version reads
            path.write_text(json.dumps(raw))
            collection.meta = load_meta(collection.directory)
            store._engine._params.clear()

        yield store, aged


async def _old_client(tmp_path: Path) -> AsyncIterator[tuple[VectorStoreBase, Aged]]:
    from qdrant_client import AsyncQdrantClient

    from archivist.rag.store.qdrant import QdrantStore

    client = AsyncQdrantClient(location=":memory:")
    store = QdrantStore.from_client(client)

    async def aged() -> None:
        info = await client.get_collection("docs")
        assert (info.config.metadata or {}).get("archivist_terms") == TERM_LAYOUT
        await client.update_collection("docs", metadata={"archivist_terms": 1})
        store._engine._params.clear()

    try:
        async with store:
            yield store, aged
    finally:
        await client.close()


async def _old_pgvector(tmp_path: Path) -> AsyncIterator[tuple[VectorStoreBase, Aged]]:
    from archivist.rag import PgVectorStore
    from pgvector_server import pgvector_server

    with pgvector_server() as url:
        async with PgVectorStore(url, table_prefix="layout") as store:

            async def aged() -> None:
                async with store._engine._open().connection() as connection:
                    await connection.execute(
                        "UPDATE layout_collections SET term_layout = 1 WHERE name = 'docs'"
                    )
                store._engine._collections.clear()

            yield store, aged


OLD = {"edge-path": _old_edge, "client-local": _old_client, "pgvector": _old_pgvector}


@pytest.fixture(params=sorted(OLD))
async def old_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[VectorStoreBase, Aged]]:
    async for pair in OLD[request.param](tmp_path):
        yield pair


async def _sparse_ids(store: VectorStoreBase, query: str) -> list[str]:
    hits = await store.search("docs", None, 5, query_text=query, mode="sparse")
    return [hit.document_id for hit in hits]


async def test_an_old_collection_keeps_its_rules_and_says_so(
    old_store: tuple[VectorStoreBase, Aged], caplog: pytest.LogCaptureFixture
) -> None:
    store, aged = old_store
    await store.create_collection("docs", DIMENSIONS)
    assert await store.term_layout("docs") == TERM_LAYOUT
    await aged()
    assert await store.term_layout("docs") == 1
    # Written after it aged, by its own rules: the number is no term, in the document or
    # the query, so the two notes tie on "port" and the number cannot tell them apart.
    await store.insert(
        "docs", [record(name, 0, unit(0), total=1, text=text) for name, text in PORTS.items()]
    )
    hits = await store.search("docs", None, 5, query_text="port 8731", mode="sparse")
    assert sorted(hit.document_id for hit in hits) == ["p8731", "p8732"]
    assert hits[0].score == pytest.approx(hits[1].score)
    assert await _sparse_ids(store, "8731") == []
    kb = KnowledgeBase("ports", "ports", HashEmbeddingModel(dimensions=DIMENSIONS), store, "docs")
    with caplog.at_level(logging.WARNING, logger="archivist.rag.knowledge"):
        await kb.search("port 8731")
        await kb.search("port 8732")
    notes = [r.getMessage() for r in caplog.records if "before numbers" in r.getMessage()]
    assert len(notes) == 1 and "--rebuild" in notes[0]


async def test_a_new_collection_tells_numbers_apart(tmp_path: Path) -> None:
    from archivist.rag.store.qdrant import QdrantStore

    async with QdrantStore(path=tmp_path / "store") as store:
        kb = KnowledgeBase(
            "ports", "ports", HashEmbeddingModel(dimensions=DIMENSIONS), store, "docs"
        )
        for name, text in PORTS.items():
            chunk = Chunk(content=TextBlock(text=text), source=name, chunk_index=0, total_chunks=1)
            await kb.insert_document([chunk], document_id=name)
        assert await store.term_layout("docs") == TERM_LAYOUT
        assert await _sparse_ids(store, "port 8731") == ["p8731", "p8732"]
        assert await _sparse_ids(store, "8732") == ["p8732"]
