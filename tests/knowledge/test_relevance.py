"""`relevance` on every hit: 0..1 in every mode and language, and `min_relevance` that lets an
unanswerable question come back empty."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archivist.embedding import EmbeddingModelBase
from archivist.message import TextBlock
from archivist.rag import KnowledgeBase
from archivist.rag.document import Chunk
from archivist.rag.store.core.background import term_weight
from archivist.rag.store.core.bm25 import Bm25Encoder
from archivist.rag.store.core.ranking import coverage, lexical
from archivist.rag.store.core.relevance import DEFAULT_MIN_RELEVANCE, relevance
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing import corpora
from archivist.testing.fixtures import StoreKind, entered_store

FACTS = {
    "pandas": "Giant pandas live in the bamboo forests of Sichuan and eat bamboo most of the day.",
    "rockets": "Liquid-fuelled rockets burn kerosene with liquid oxygen to reach orbit.",
    "bread": "Sourdough bread rises with a natural leaven of wild yeast and lactic bacteria.",
    "tar": "tar --strip-components=NUMBER strips NUMBER leading components from file names.",
    "zh": "大熊猫生活在中国四川的竹林里，每天要吃很多竹子。",
    "zh2": "长城是中国古代修建的防御工程，全长超过两万公里。",
}


async def _kb(embedder: EmbeddingModelBase, store: QdrantStore) -> KnowledgeBase:
    kb = KnowledgeBase("facts", "facts", embedder, store, "facts")
    for name, text in FACTS.items():
        chunk = Chunk(
            content=TextBlock(text=text), source=f"{name}.txt", chunk_index=0, total_chunks=1
        )
        await kb.insert_document([chunk], document_id=name)
    return kb


@pytest.mark.parametrize("mode", ["hybrid", "dense", "sparse"])
async def test_every_hit_has_a_relevance_that_ranks_the_answer_first(
    embedder: EmbeddingModelBase, store: QdrantStore, mode: str
) -> None:
    kb = await _kb(embedder, store)
    hits = await kb.search("what do giant pandas eat", top_k=6, mode=mode)  # type: ignore[arg-type]
    assert hits and all(h.relevance is not None and 0 <= h.relevance <= 1 for h in hits)
    best = max(hits, key=lambda h: h.relevance or 0)
    assert best.document_id == "pandas"
    assert best.relevance is not None and best.relevance >= DEFAULT_MIN_RELEVANCE


async def test_a_chinese_answer_comes_first_far_above_the_others(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = await _kb(embedder, store)
    hits = await kb.search("长城是什么时候修建的", top_k=3)
    assert hits[0].document_id == "zh2"
    first, second = hits[0].relevance, hits[1].relevance
    assert first is not None and second is not None
    assert first > 10 * second  # the calibration is conservative for short questions
    kept = await kb.search("长城是什么时候修建的", top_k=3, min_relevance=first / 2)
    assert [h.document_id for h in kept] == ["zh2"]


async def test_a_question_nothing_answers_comes_back_empty(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    kb = await _kb(embedder, store)
    question = "how do I renew my passport at the embassy"
    assert await kb.search(question, top_k=3)  # ranking alone always finds something
    assert await kb.search(question, top_k=3, min_relevance=DEFAULT_MIN_RELEVANCE) == []
    assert await kb.search("地铁几点停运", top_k=3, min_relevance=DEFAULT_MIN_RELEVANCE) == []


async def test_min_relevance_is_checked(embedder: EmbeddingModelBase, store: QdrantStore) -> None:
    kb = await _kb(embedder, store)
    for bad in (-0.1, 1.5, "high", True):
        with pytest.raises(ValueError, match="min_relevance"):
            await kb.search("x", min_relevance=bad)  # type: ignore[arg-type]


def test_relevance_grows_with_each_signal_and_needs_one() -> None:
    assert relevance() is None
    hybrid = [
        relevance(*signals) for signals in ((0.2, 0.3, 0.5), (0.6, 0.3, 0.5), (0.6, 0.5, 0.5))
    ]
    assert hybrid == sorted(hybrid) and len(set(hybrid)) == 3
    assert relevance(0.6, 0.5, 0.5) < relevance(0.6, 0.5, 0.9)  # type: ignore[operator]
    assert relevance(None, 0.2) < relevance(None, 0.6)  # type: ignore[operator]
    assert relevance(0.2) < relevance(0.7)  # type: ignore[operator]


@pytest.mark.parametrize("kind", ["edge-memory", "client-local"])
async def test_a_hybrid_hit_is_judged_by_its_own_dense_and_lexical_evidence(
    embedder: EmbeddingModelBase, kind: StoreKind
) -> None:
    """A hybrid hit's relevance comes from its cosine similarity (what a dense search
    scores it), its BM25 score as a share of the best possible (what a sparse search scores
    it, over the ceiling) and the share of the query's terms it holds."""
    async with entered_store(kind) as store:
        kb = await _kb(embedder, store)
        question = "what do giant pandas eat in the bamboo forests"
        fused = {h.document_id: h.relevance for h in await kb.search(question, top_k=6)}
        similarity = {
            h.document_id: h.score
            for h in await kb.search(question, top_k=6, mode="dense", max_per_document=6)
        }
        bm25 = {
            h.document_id: h.score
            for h in await kb.search(question, top_k=6, mode="sparse", max_per_document=6)
        }
        idf = await store.query_term_weights("facts", question)
        encoder = Bm25Encoder()
        assert set(fused) == set(similarity) == set(FACTS)
        for document_id, value in fused.items():
            held = set(encoder.count(FACTS[document_id]).counts)
            expected = relevance(
                similarity[document_id],
                lexical(idf, bm25.get(document_id, 0.0)),
                coverage(idf, sum(w for term, w in idf.items() if term in held)),
            )
            # Read back from float16 storage, the vector gives the engine's cosine to ~1e-5.
            assert value == pytest.approx(expected, abs=1e-4), document_id
        assert fused["pandas"] > fused["rockets"]  # type: ignore[operator]


@pytest.mark.parametrize("kind", ["edge-memory", "client-local"])
async def test_a_rare_query_word_counts_for_more_than_a_common_one(
    embedder: EmbeddingModelBase, kind: StoreKind
) -> None:
    """The lexical signal weighs each query term by its IDF: of two chunks holding one of the
    query's two words each, the one holding the rarer word is the likelier answer."""
    texts = {f"river{n}": f"The river number {n} floods the valley in spring." for n in range(5)}
    texts["okapi"] = "The okapi lives in the rainforest of the Congo."
    async with entered_store(kind) as store:
        kb = KnowledgeBase("facts", "facts", embedder, store, "facts")
        for name, text in texts.items():
            chunk = Chunk(content=TextBlock(text=text), source=name, chunk_index=0, total_chunks=1)
            await kb.insert_document([chunk], document_id=name)
        hits = {h.document_id: h for h in await kb.search("okapi river", top_k=6, mode="sparse")}
        assert hits["okapi"].relevance > hits["river0"].relevance  # type: ignore[operator]
        weights = await store.query_term_weights("facts", "okapi river")
        assert len(weights) == 2
        rare, common = sorted(weights.values(), reverse=True)
        assert rare > common > 0
        for hit in hits.values():  # a BM25 hit is judged by its score over the best possible
            assert hit.relevance == pytest.approx(relevance(None, lexical(weights, hit.score)))


@pytest.mark.parametrize("kind", ["edge-memory", "client-local"])
async def test_a_number_no_passage_holds_lowers_every_passage(
    embedder: EmbeddingModelBase, kind: StoreKind
) -> None:
    """A question about port 9999 is not answered by the note on port 8731: the number the
    question names counts against every passage that lacks it, even where none has it."""
    ports = {f"p{port}": f"The staging gateway listens on port {port}." for port in (8731, 8732)}
    async with entered_store(kind) as store:
        kb = KnowledgeBase("ports", "ports", embedder, store, "ports")
        for name, text in ports.items():
            chunk = Chunk(content=TextBlock(text=text), source=name, chunk_index=0, total_chunks=1)
            await kb.insert_document([chunk], document_id=name)
        known = await kb.search("which port does the staging gateway use, 8731?", top_k=2)
        unknown = await kb.search("which port does the staging gateway use, 9999?", top_k=2)
        assert known[0].document_id == "p8731"
        assert known[0].relevance > known[1].relevance  # type: ignore[operator]
        assert max(h.relevance for h in unknown) < known[1].relevance  # type: ignore[operator,type-var]
        weights = await store.query_term_weights("ports", "port 9999")
        assert len(weights) == 2  # "port", and 9999 as a term no chunk holds
        (number,) = set(Bm25Encoder().query("9999").indices)
        assert weights[number] == pytest.approx(term_weight(number, 0, 2))
        assert weights[number] == max(weights.values())
        assert await kb.search("9999") == []  # looked up by BM25 alone: nothing holds it


async def test_hybrid_is_not_dragged_down_by_a_model_that_cannot_read_the_query(
    embedder: EmbeddingModelBase,
) -> None:
    """The default model reads little Chinese: a hybrid search of a Chinese question ranks
    and judges its hits by their lexical evidence, as BM25 does, not by noise vectors."""
    topics = json.loads((Path(corpora.__file__).parent / "zh_topics.json").read_text("utf-8"))
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase("zh", "zh", embedder, store, "zh")
        for name, text in topics["documents"].items():
            chunk = Chunk(content=TextBlock(text=text), source=name, chunk_index=0, total_chunks=1)
            await kb.insert_document([chunk], document_id=name)
        first = 0
        for name, question in topics["questions"].items():
            hybrid = await kb.search(question, top_k=5, mode="hybrid")
            sparse = await kb.search(question, top_k=5, mode="sparse")
            # what BM25 finds leads, in its order and at its relevance; the rest hold
            # none of the question's terms
            shown = min(3, len(sparse))
            assert [h.document_id for h in hybrid][:shown] == [h.document_id for h in sparse][
                :shown
            ]
            assert [h.relevance for h in hybrid][:shown] == pytest.approx(
                [h.relevance for h in sparse][:shown]
            )
            first += hybrid[0].document_id == name
        assert first >= 15
