"""`{key: None}` in a metadata filter means "key absent", natively, on every Qdrant backend:
the "no tenant" scope sees, replaces and deletes only the records that carry no tenant."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.fixtures import STORE_KINDS, entered_store
from archivist.testing.store import DIMENSIONS, batches, record, unit

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect in the local Qdrant")

NO_TENANT = {"tenant": None}


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[QdrantStore]:
    async with entered_store(request.param, tmp_path) as opened:
        yield opened


async def test_none_matches_only_records_without_the_key(store: QdrantStore) -> None:
    await store.create_collection("docs", DIMENSIONS)
    await store.insert(
        "docs",
        [
            record("same", 0, tenant="a", total=1),
            record("zero", 0, tenant=0, total=1),
            record("false", 0, tenant=False, total=1),
            record("plain", 0, unit(2), total=1, other="x"),
        ],
    )
    await store.insert("docs", [record("same", 0, unit(1), total=1)])
    listed = await store.list_documents("docs", NO_TENANT)
    assert [d.document_id for d in listed] == ["plain", "same"]
    hits = await store.search("docs", unit(0), top_k=10, metadata_filter=NO_TENANT)
    assert sorted(h.document_id for h in hits) == ["plain", "same"]
    assert all("tenant" not in h.chunk.metadata for h in hits)
    # a write in the no-tenant scope replaces only the untenanted "same"
    written = await store.replace_document(
        "docs", "same", batches([record("same", 0, unit(3), total=1, v=2)]), NO_TENANT
    )
    assert written == 1
    assert [
        c.metadata for c in await store.list_chunks("docs", "same", metadata_filter=NO_TENANT)
    ] == [{"v": 2}]
    [tenant_a] = await store.list_chunks("docs", "same", metadata_filter={"tenant": "a"})
    assert tenant_a.metadata == {"tenant": "a"}
    await store.delete("docs", "same", NO_TENANT)
    assert await store.list_chunks("docs", "same", metadata_filter=NO_TENANT) == []
    assert len(await store.list_chunks("docs", "same")) == 1  # tenant a's copy is still there


async def test_a_write_in_the_no_tenant_scope_may_not_carry_a_tenant(store: QdrantStore) -> None:
    await store.create_collection("docs", DIMENSIONS)
    with pytest.raises(ValueError, match="outside metadata_filter"):
        await store.replace_document(
            "docs", "d", batches([record("d", 0, tenant="a", total=1)]), NO_TENANT
        )
    assert await store.list_documents("docs") == []


async def test_an_absent_key_combines_with_other_conditions(store: QdrantStore) -> None:
    await store.create_collection("docs", DIMENSIONS)
    scope = {"tenant": None, "kind": "a"}
    await store.insert(
        "docs",
        [
            record("plain-a", 0, total=1, kind="a"),
            record("plain-b", 0, total=1, kind="b"),
            record("tenant-a", 0, total=1, kind="a", tenant="t"),
        ],
    )
    assert [d.document_id for d in await store.list_documents("docs", scope)] == ["plain-a"]
    hits = await store.search("docs", unit(0), top_k=10, metadata_filter=scope)
    assert [h.document_id for h in hits] == ["plain-a"]
    # a write in this scope must carry kind "a" (same type) and no tenant
    for outside in ({}, {"kind": "b"}, {"kind": 1}, {"kind": "a", "tenant": "t"}):
        with pytest.raises(ValueError, match="outside metadata_filter"):
            await store.replace_document(
                "docs", "new", batches([record("new", 0, total=1, **outside)]), scope
            )
    written = await store.replace_document(
        "docs", "new", batches([record("new", 0, total=1, kind="a")]), scope
    )
    assert written == 1
