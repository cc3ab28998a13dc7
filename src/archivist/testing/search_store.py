"""Conformance for the search capabilities a store may declare beyond the contract.

`GroupingConformance` is for stores with `supports_grouping` (`max_per_document` done by the
engine or by paging). A backend's test class mixes these in beside `VectorStoreConformance`;
they use the same `store` fixture (an entered store, Cosine distance).
"""

from __future__ import annotations

from typing import Any

from archivist.testing.store import DIMENSIONS, record, unit


async def _one_long_document(store: Any, collection: str = "docs") -> None:
    """`long`: 12 chunks nearest the query unit(0); `d0`..`d5`: one chunk each, further off."""
    await store.create_collection(collection, DIMENSIONS)
    long = [
        record("long", n, unit(0, 0.01 * n), total=12, text=f"tar strip components part {n}")
        for n in range(12)
    ]
    others = [
        record(f"d{n}", 0, unit(0, 0.5 + 0.2 * n), total=1, text=f"tar archive note {n}")
        for n in range(6)
    ]
    await store.insert(collection, long + others)


class GroupingConformance:
    """`max_per_document`: at most that many chunks per document, and still `top_k` of them."""

    async def test_one_per_document_still_fills_top_k(self, store: Any) -> None:
        await _one_long_document(store)
        hits = await store.search("docs", unit(0), top_k=5, max_per_document=1)
        assert [hit.document_id for hit in hits] == ["long", "d0", "d1", "d2", "d3"]
        assert hits[0].chunk.chunk_index == 0

    async def test_a_document_keeps_its_best_chunks_up_to_the_cap(self, store: Any) -> None:
        await _one_long_document(store)
        hits = await store.search("docs", unit(0), top_k=4, max_per_document=2)
        assert [(h.document_id, h.chunk.chunk_index) for h in hits] == [
            ("long", 0),
            ("long", 1),
            ("d0", 0),
            ("d1", 0),
        ]
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    async def test_fewer_documents_than_top_k_give_what_there_is(self, store: Any) -> None:
        await _one_long_document(store)
        hits = await store.search("docs", unit(0), top_k=10, max_per_document=1)
        assert sorted(hit.document_id for hit in hits) == sorted(
            ["long", *(f"d{n}" for n in range(6))]
        )

    async def test_grouping_works_in_every_mode(self, store: Any) -> None:
        await _one_long_document(store)
        for mode in await store.search_modes("docs"):
            hits = await store.search(
                "docs",
                None if mode == "sparse" else unit(0),
                top_k=4,
                max_per_document=1,
                query_text="tar strip components",
                mode=mode,
            )
            ids = [hit.document_id for hit in hits]
            assert len(ids) == 4 and len(set(ids)) == 4, (mode, ids)

    async def test_grouping_applies_within_the_metadata_filter(self, store: Any) -> None:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert(
            "docs",
            [record("a", n, unit(0), total=5, tenant="t1") for n in range(5)]
            + [record("b", n, unit(0, 0.1), total=5, tenant="t2") for n in range(5)]
            + [record("c", 0, unit(0, 0.3), total=1, tenant="t1")],
        )
        hits = await store.search(
            "docs", unit(0), top_k=3, metadata_filter={"tenant": "t1"}, max_per_document=1
        )
        assert [hit.document_id for hit in hits] == ["a", "c"]

    async def test_bad_max_per_document_is_rejected_naming_it(self, store: Any) -> None:
        await _one_long_document(store)
        for bad in (0, -1, 1.5, True):
            try:
                await store.search("docs", unit(0), top_k=3, max_per_document=bad)
            except ValueError as error:
                assert "max_per_document" in str(error)
            else:
                raise AssertionError(f"max_per_document={bad!r} was accepted")
