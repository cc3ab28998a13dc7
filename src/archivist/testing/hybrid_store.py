"""Conformance mixins for hybrid (dense + BM25) and diversity search, for stores declaring them.

A store's test class mixes `HybridSearchTests` (capability `search_modes` with "sparse" and
"hybrid") and `DiversityTests` (`diversity`) in beside the core mixins of
`archivist.testing.store`; they use the same `store` fixture (an entered store, Cosine distance).
"""

from __future__ import annotations

from typing import Any

import pytest

from archivist.message import Base64Source, DataBlock
from archivist.rag.document import Chunk
from archivist.rag.record import VectorRecord
from archivist.testing.store import DIMENSIONS, StoreTests, batches, record, unit

TEXTS = {
    "pandas": "Giant pandas live in the bamboo forests of Sichuan and eat bamboo all day.",
    "rockets": "Liquid-fuelled rockets burn kerosene with liquid oxygen to reach orbit.",
    "bread": "Sourdough bread rises with a natural leaven of wild yeast and bacteria.",
    "chinese": "大熊猫生活在中国四川的竹林里，每天吃很多竹子。",
}


async def _fill(store: Any, collection: str = "docs", **metadata: str) -> None:
    """One chunk per text; every dense vector points the same way, so only BM25 tells them
    apart, except `bread`, whose dense vector alone matches the query vector unit(1)."""
    await store.create_collection(collection, DIMENSIONS)
    await store.insert(
        collection,
        [
            record(
                name,
                0,
                unit(1) if name == "bread" else unit(0),
                total=1,
                text=text,
                **metadata,
            )
            for name, text in TEXTS.items()
        ],
    )


class HybridSearchTests(StoreTests):
    """Sparse and hybrid search: BM25 vectors written with each text chunk; a hybrid search
    ranks the best chunks of both sides together."""

    capability = "search_modes"

    async def test_the_store_declares_sparse_and_hybrid_search(self, store: Any) -> None:
        assert store.capabilities.search_modes == {"dense", "sparse", "hybrid"}

    async def test_new_collections_offer_every_mode(self, store: Any) -> None:
        await store.create_collection("docs", DIMENSIONS)
        assert set(await store.search_modes("docs")) == {"hybrid", "dense", "sparse"}

    async def test_sparse_finds_the_chunk_by_its_words(self, store: Any) -> None:
        await _fill(store)
        hits = await store.search(
            "docs", None, top_k=2, query_text="what do pandas eat?", mode="sparse"
        )
        assert [hit.document_id for hit in hits] == ["pandas"]
        assert hits[0].chunk.content.text == TEXTS["pandas"]

    async def test_sparse_stems_english_words(self, store: Any) -> None:
        await _fill(store)
        hits = await store.search("docs", None, 1, query_text="burning rocket", mode="sparse")
        assert [hit.document_id for hit in hits] == ["rockets"]

    async def test_sparse_segments_chinese(self, store: Any) -> None:
        await _fill(store)
        hits = await store.search("docs", None, 1, query_text="熊猫吃什么竹子", mode="sparse")
        assert [hit.document_id for hit in hits] == ["chinese"]

    async def test_hybrid_ranks_both_sides_together(self, store: Any) -> None:
        await _fill(store)
        # The dense side alone ranks "bread" first; the words point at "rockets".
        dense = await store.search("docs", unit(1), top_k=1)
        assert [hit.document_id for hit in dense] == ["bread"]
        hybrid = await store.search(
            "docs", unit(1), top_k=4, query_text="kerosene rockets", mode="hybrid"
        )
        ids = [hit.document_id for hit in hybrid]
        assert set(ids[:2]) == {"bread", "rockets"}
        assert len(ids) == len(set(ids)) == 4
        assert [h.score for h in hybrid] == sorted((h.score for h in hybrid), reverse=True)

    async def test_hybrid_respects_top_k(self, store: Any) -> None:
        await _fill(store)
        hits = await store.search("docs", unit(0), top_k=2, query_text="bamboo", mode="hybrid")
        assert len(hits) == 2

    async def test_tenant_filter_holds_on_both_sides(self, store: Any) -> None:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert(
            "docs",
            [
                record("a-doc", 0, unit(0), total=1, text=TEXTS["pandas"], tenant_id="a"),
                record("b-doc", 0, unit(0), total=1, text=TEXTS["rockets"], tenant_id="b"),
            ],
        )
        for mode in ("sparse", "hybrid"):
            hits = await store.search(
                "docs", unit(0), 5, {"tenant_id": "a"}, query_text="rockets kerosene", mode=mode
            )
            assert {hit.document_id for hit in hits} <= {"a-doc"}, mode

    async def test_query_without_searchable_words(self, store: Any) -> None:
        await _fill(store)
        assert await store.search("docs", None, 3, query_text="the of ?!", mode="sparse") == []
        hybrid = await store.search("docs", unit(1), 1, query_text="the of ?!", mode="hybrid")
        assert [hit.document_id for hit in hybrid] == ["bread"]

    async def test_modes_need_their_inputs(self, store: Any) -> None:
        await _fill(store)
        with pytest.raises(ValueError, match="query_text"):
            await store.search("docs", unit(0), 3, mode="hybrid")
        with pytest.raises(ValueError, match="query_vector"):
            await store.search("docs", None, 3, query_text="pandas", mode="hybrid")
        with pytest.raises(ValueError, match="mode must be one of"):
            await store.search("docs", unit(0), 3, query_text="x", mode="bm25")

    async def test_data_chunks_live_beside_text_chunks(self, store: Any) -> None:
        await _fill(store)
        image = VectorRecord(
            vector=unit(2),
            document_id="image",
            chunk=Chunk(
                content=DataBlock(source=Base64Source(data="iVBORw0K", media_type="image/png")),
                source="image.png",
                chunk_index=0,
                total_chunks=1,
            ),
        )
        await store.insert("docs", [image])
        dense = await store.search("docs", unit(2), 1)
        assert [hit.document_id for hit in dense] == ["image"]
        sparse = await store.search("docs", None, 5, query_text="bamboo pandas", mode="sparse")
        assert "image" not in {hit.document_id for hit in sparse}
        if store.capabilities.relevance:
            # An image has no words to lack: a hybrid search judges it by its similarity
            # alone, as a dense search does, not as a text chunk without the query's words.
            hybrid = await store.search("docs", unit(2), 5, query_text="bamboo", mode="hybrid")
            shown = {hit.document_id: hit.relevance for hit in hybrid}
            assert shown["image"] == pytest.approx(dense[0].relevance)

    async def test_replaced_and_deleted_documents_leave_bm25_search(self, store: Any) -> None:
        await _fill(store)
        await store.delete("docs", "pandas")
        assert await store.search("docs", None, 3, query_text="giant pandas", mode="sparse") == []
        await store.insert(
            "docs", [record("rockets", 0, unit(0), total=1, text="Solid boosters and pandas.")]
        )
        hits = await store.search("docs", None, 3, query_text="pandas", mode="sparse")
        assert [hit.document_id for hit in hits] == ["rockets"]

    async def test_deleted_and_replaced_chunks_leave_the_bm25_totals(self, store: Any) -> None:
        """The BM25 totals (the average chunk length new chunks are weighed by) are those of
        the chunks stored: after chunks are written again, a long document is deleted and
        another replaced, a later
        chunk is weighed as in a collection that never had them. A one-word query's score
        ratio between two chunks cancels the word's IDF, which is the engine's (Qdrant Edge
        counts deleted points in it until it vacuums their segment)."""
        long_text = " ".join(["bamboo forests and orbital rockets"] * 40)
        later = record("later", 0, unit(0), total=1, text="Pandas and rockets share a forest.")
        ratios = {}
        for collection, churn in (("churned", True), ("fresh", False)):
            await _fill(store, collection)
            if churn:
                await _fill(store, collection)  # the same chunks again overwrite themselves
                await store.insert(
                    collection, [record("long", 0, unit(0), total=1, text=long_text)]
                )
                await store.delete(collection, "long")
                replacement = record("bread", 0, unit(1), total=1, text=long_text)
                await store.replace_document(collection, "bread", batches([replacement]))
                bread = record("bread", 0, unit(1), total=1, text=TEXTS["bread"])
                await store.replace_document(collection, "bread", batches([bread]))
            await store.insert(collection, [later])
            hits = await store.search(collection, None, 5, query_text="pandas", mode="sparse")
            scores = {hit.document_id: hit.score for hit in hits}
            assert scores.keys() == {"later", "pandas"}, collection
            ratios[collection] = scores["later"] / scores["pandas"]
        assert ratios["churned"] == pytest.approx(ratios["fresh"], rel=1e-4)

    async def test_rare_words_outweigh_common_ones(self, store: Any) -> None:
        # IDF comes from the collection: "forest" is in every chunk, "orchid" in one.
        await store.create_collection("docs", DIMENSIONS)
        texts = [f"forest forest forest walk number {n}" for n in range(8)]
        texts.append("a single orchid in the forest")
        await store.insert(
            "docs", [record(f"d{n}", 0, total=1, text=text) for n, text in enumerate(texts)]
        )
        hits = await store.search("docs", None, 1, query_text="forest orchid", mode="sparse")
        assert [hit.document_id for hit in hits] == ["d8"]

    async def test_identifiers_match_as_wholes(self, store: Any) -> None:
        """A flag, a dotted name or a CamelCase name in the query finds the chunk naming it,
        not one holding its parts apart, even when the dense side prefers the look-alike (by
        as much as a real model does: cosine 1 against 0.9)."""
        await store.create_collection("man", DIMENSIONS)
        texts = {
            "tar": "tar --strip-components=NUMBER: strip NUMBER leading components from names.",
            "cmake": "cmake --install: --strip removes symbols; components are installed "
            "one by one, and the strip step is optional for all components.",
            "os": "Call os.path.join to build a path from parts.",
            "join": "To join a path from parts, os joins each path part with the separator.",
            "store": "QdrantStore keeps vectors in Qdrant.",
            "words": "A Qdrant store keeps the vectors; the store is Qdrant's.",
        }
        # The look-alikes' dense vectors match the query exactly; the others' nearly.
        lookalikes = {"cmake", "join", "words"}
        await store.insert(
            "man",
            [
                record(name, 0, unit(1) if name in lookalikes else unit(1, 0.5), total=1, text=text)
                for name, text in texts.items()
            ],
        )
        for query, wanted in (
            ("what does --strip-components do", "tar"),
            ("os.path.join", "os"),
            ("QdrantStore", "store"),
        ):
            sparse = await store.search("man", None, 1, query_text=query, mode="sparse")
            assert [hit.document_id for hit in sparse] == [wanted], query
            hybrid = await store.search("man", unit(1), 2, query_text=query, mode="hybrid")
            assert hybrid[0].document_id == wanted, (query, [h.document_id for h in hybrid])


class DiversityTests(StoreTests):
    """Maximal marginal relevance (`diversity`) in the engine, for dense and hybrid search."""

    capability = "diversity"

    async def test_the_store_declares_diversity(self, store: Any) -> None:
        assert store.capabilities.diversity, "the store does not declare diversity"

    async def _near_duplicates(self, store: Any) -> None:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert(
            "docs",
            [
                record("same", 0, unit(0, 0.0), total=3, text="pandas eat bamboo", tenant_id="a"),
                record("same", 1, unit(0, 0.05), total=3, text="pandas eat bamboo", tenant_id="a"),
                record("same", 2, unit(0, 0.1), total=3, text="pandas eat bamboo", tenant_id="a"),
                record("other", 0, unit(0, 0.9), total=1, text="pandas sleep", tenant_id="a"),
                record("far", 0, unit(0, 0.3), total=1, text="pandas climb", tenant_id="b"),
            ],
        )

    async def test_no_diversity_keeps_the_nearest(self, store: Any) -> None:
        await self._near_duplicates(store)
        plain = await store.search("docs", unit(0), 2)
        relevance_only = await store.search("docs", unit(0), 2, diversity=0.0)
        assert (
            [(h.document_id, h.chunk.chunk_index) for h in relevance_only]
            == [(h.document_id, h.chunk.chunk_index) for h in plain]
            == [("same", 0), ("same", 1)]
        )

    async def test_diversity_skips_near_duplicates(self, store: Any) -> None:
        await self._near_duplicates(store)
        for mode, text in (("dense", None), ("hybrid", "pandas")):
            hits = await store.search(
                "docs", unit(0), 2, {"tenant_id": "a"}, query_text=text, mode=mode, diversity=0.9
            )
            assert [h.document_id for h in hits] == ["same", "other"], mode
            # In the order maximal marginal relevance picked them; a dense hit is scored by
            # its similarity to the query.
            if mode == "dense":
                assert hits[0].score == pytest.approx(1.0, abs=1e-3)

    async def test_diversity_is_checked(self, store: Any) -> None:
        await self._near_duplicates(store)
        with pytest.raises(ValueError, match="from 0 to 1"):
            await store.search("docs", unit(0), 2, diversity=1.5)
        with pytest.raises(ValueError, match="needs dense vectors"):
            await store.search("docs", None, 2, query_text="pandas", mode="sparse", diversity=0.5)
