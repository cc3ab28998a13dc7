"""`QdrantStore.insert` is an upsert: the same records twice are stored once, on both engines."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from archivist.rag.store.core.generations import document_problem
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.store import DIMENSIONS, batches, record

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect in the local Qdrant")


@pytest.fixture(params=["edge", "client"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[QdrantStore]:
    made = (
        QdrantStore(path=str(tmp_path / "edge"))
        if request.param == "edge"
        else QdrantStore(location=":memory:")
    )
    async with made:
        await made.create_collection("docs", DIMENSIONS)
        yield made


async def indexes(store: QdrantStore, document_id: str) -> list[int]:
    chunks = await store.list_chunks("docs", document_id, 0, 100)
    return [chunk.chunk_index for chunk in chunks]


async def test_inserting_the_same_records_twice_stores_them_once(store: QdrantStore) -> None:
    records = [record("a", i, total=3) for i in range(3)]
    await store.insert("docs", records)
    await store.insert("docs", records)
    assert await indexes(store, "a") == [0, 1, 2]
    generations = await store.document_generations("docs")
    assert document_problem(generations) is None


async def test_a_second_insert_replaces_the_chunk_text(store: QdrantStore) -> None:
    await store.insert("docs", [record("a", 0, total=1, text="old words")])
    await store.insert("docs", [record("a", 0, total=1, text="new words")])
    chunks = await store.list_chunks("docs", "a", 0, 10)
    assert [c.content.text for c in chunks] == ["new words"]  # type: ignore[union-attr]


async def test_two_tenants_with_one_document_id_keep_their_own_chunks(store: QdrantStore) -> None:
    await store.insert("docs", [record("a", 0, total=1, tenant="t1")])
    await store.insert("docs", [record("a", 0, total=1, tenant="t2")])
    for tenant in ("t1", "t2"):
        chunks = await store.list_chunks("docs", "a", 0, 10, {"tenant": tenant})
        assert len(chunks) == 1


async def test_replace_document_after_inserts_leaves_one_whole_version(store: QdrantStore) -> None:
    await store.insert("docs", [record("a", i, total=2) for i in range(2)])
    await store.insert("docs", [record("a", i, total=2) for i in range(2)])
    written = await store.replace_document(
        "docs", "a", batches([record("a", i, total=3) for i in range(3)])
    )
    assert written == 3
    assert await indexes(store, "a") == [0, 1, 2]
    assert document_problem(await store.document_generations("docs")) is None
    assert await store.repair_document("docs", "a") == []
    assert await indexes(store, "a") == [0, 1, 2]
