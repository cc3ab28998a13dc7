"""A store with only the abstract methods, written as AgentScope's skeleton (`delete` without
`metadata_filter`, `search` with four parameters), passes the core conformance mixins on the
base class's defaults: `replace_document`, `document_summary` and `search_modes`."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any, Self

import pytest

from archivist.rag.record import DocumentSummary, VectorRecord, VectorSearchResult
from archivist.rag.store.base import VectorStoreBase
from archivist.rag.store.core.arguments import (
    check_document_arguments,
    check_records,
    check_search,
    matches_filter,
)
from archivist.testing.store import (
    CollectionTests,
    DeclarationTests,
    DenseSearchTests,
    ReplaceTests,
    WriteTests,
    batches,
    record,
)
from archivist.validation import (
    check_collection_name,
    check_metadata_filter,
    check_positive_int,
    check_query_vector,
)

Key = tuple[str, int, str]


class MinimalStore(VectorStoreBase):
    """Dicts of records; declares no capability."""

    def __init__(self) -> None:
        self._collections: dict[str, tuple[int, dict[Key, VectorRecord]]] = {}

    async def __aenter__(self) -> Self:
        return self

    async def create_collection(self, name: str, dimensions: int) -> None:
        check_collection_name(name)
        check_positive_int(dimensions, "dimensions")
        existing = self._collections.setdefault(name, (dimensions, {}))
        if existing[0] != dimensions:
            raise ValueError(f"collection {name!r} has {existing[0]} dimensions")

    async def delete_collection(self, name: str) -> None:
        check_collection_name(name)
        self._collections.pop(name, None)

    async def has_collection(self, name: str) -> bool:
        check_collection_name(name)
        return name in self._collections

    async def collection_dimensions(self, name: str) -> int | None:
        check_collection_name(name)
        return self._collections[name][0] if name in self._collections else None

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        check_collection_name(collection)
        if not records:
            return
        if collection not in self._collections:
            raise ValueError(f"collection {collection!r} does not exist")
        dimensions, rows = self._collections[collection]
        check_records(records, dimensions)
        for stored in records:
            key = (stored.document_id, stored.chunk.chunk_index, str(stored.chunk.metadata))
            rows[key] = stored.model_copy(deep=True)

    async def delete(self, collection: str, document_id: str) -> None:  # type: ignore[override]
        check_document_arguments(collection, document_id)
        rows = self._collections.get(collection, (0, {}))[1]
        for key in [key for key in rows if key[0] == document_id]:
            del rows[key]

    async def search(  # type: ignore[override]
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        checked = check_search(collection, query_vector, top_k, metadata_filter)
        if collection not in self._collections:
            return []
        dimensions, rows = self._collections[collection]
        query = check_query_vector(query_vector, dimensions)
        found = [
            VectorSearchResult(
                score=_cosine(query, row.vector), document_id=row.document_id, chunk=row.chunk
            )
            for row in rows.values()
            if matches_filter(row.chunk.metadata, checked.metadata_filter)
        ]
        return sorted(found, key=lambda hit: -hit.score)[: checked.top_k]

    async def list_documents(
        self, collection: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[DocumentSummary]:
        check_collection_name(collection)
        scope = check_metadata_filter(metadata_filter)
        chunks: dict[str, list[VectorRecord]] = {}
        for row in self._collections.get(collection, (0, {}))[1].values():
            if matches_filter(row.chunk.metadata, scope):
                chunks.setdefault(row.document_id, []).append(row)
        summaries = []
        for document_id, rows in sorted(chunks.items()):
            first = min(rows, key=lambda row: row.chunk.chunk_index).chunk
            summaries.append(
                DocumentSummary(
                    document_id=document_id,
                    source=first.source,
                    chunk_count=len(rows),
                    metadata=first.metadata,
                )
            )
        return summaries


def _cosine(a: list[float], b: list[float]) -> float:
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / (norms or 1.0)


@pytest.fixture
async def store() -> AsyncIterator[MinimalStore]:
    async with MinimalStore() as opened:
        yield opened


class TestMinimalStore(
    CollectionTests, WriteTests, DenseSearchTests, ReplaceTests, DeclarationTests
):
    """The core contract on the base class's defaults."""


async def test_a_scoped_replace_is_refused_before_anything_is_read(store: MinimalStore) -> None:
    await store.create_collection("docs", 4)
    await store.insert("docs", [record("d", 0, tenant="a", text="old")])
    with pytest.raises(TypeError, match=r"MinimalStore.delete has no metadata_filter"):
        await store.replace_document(
            "docs", "d", batches([record("d", 0, tenant="a")]), {"tenant": "a"}
        )
    [hit] = await store.search("docs", [1.0, 0.0, 0.0, 0.0], 5)
    assert hit.chunk.content.text == "old"  # type: ignore[union-attr]


async def test_the_minimal_store_offers_dense_search_only(store: MinimalStore) -> None:
    await store.create_collection("docs", 4)
    assert await store.search_modes("docs") == ("dense",)
    assert not store.capabilities.search_options
