"""Cases that hold for QdrantStore's backends beyond the store contract: limits that come from
Qdrant (64-bit integer payload index, JSON payload paths), from keeping a collection in a
directory, and dense-only collections (`sparse=False`)."""

from __future__ import annotations

from typing import Any

import pytest

from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.store import DIMENSIONS, record, unit


class QdrantOnlyCases:
    """Mixed into each QdrantStore backend's test class beside the conformance suites (whose
    `docs` fixture it uses)."""

    @pytest.mark.parametrize("name", [".", "..", "a/b", "a b", "../up", "x" * 256])
    async def test_names_unsafe_as_directories_are_rejected(
        self, store: QdrantStore, name: str
    ) -> None:
        with pytest.raises(ValueError, match="collection name"):
            await store.create_collection(name, DIMENSIONS)

    @pytest.mark.parametrize("bad_key", ['say "hi"', "back\\slash"])
    async def test_filter_keys_that_break_payload_paths_are_rejected(
        self, store: QdrantStore, docs: str, bad_key: str
    ) -> None:
        with pytest.raises(ValueError, match="metadata_filter key"):
            await store.list_documents(docs, metadata_filter={bad_key: "v"})

    async def test_filter_ints_beyond_64_bits_are_rejected_naming_the_key(
        self, store: QdrantStore, docs: str
    ) -> None:
        await store.insert(docs, [record("a", 0, k="v")])
        bad_filter: dict[str, Any] = {"k": 2**63}
        with pytest.raises(ValueError, match="'k'"):
            await store.search(docs, unit(0), metadata_filter=bad_filter)
        with pytest.raises(ValueError, match="'k'"):
            await store.delete(docs, "a", metadata_filter=bad_filter)
        assert len(await store.list_chunks(docs, "a")) == 1

    async def test_dense_only_collection_offers_dense_search_only(self, store: QdrantStore) -> None:
        await store.create_collection("plain", DIMENSIONS, sparse=False)
        assert await store.search_modes("plain") == ("dense",)
        await store.insert("plain", [record("d", 0, total=1, text="pandas")])
        with pytest.raises(ValueError, match="'plain' has no BM25 terms"):
            await store.search("plain", unit(0), 3, query_text="pandas", mode="hybrid")
        assert [h.document_id for h in await store.search("plain", unit(0), 3)] == ["d"]
