"""One ordering: hits come by relevance everywhere, and by default one document does not fill
the list while other documents are relevant."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archivist.message import TextBlock
from archivist.middleware.retrieval import search_and_fuse
from archivist.rag import KnowledgeBase
from archivist.rag.document import Chunk
from archivist.rag.knowledge.searching import SPREAD_FLOOR, spread_documents
from archivist.rag.record import VectorSearchResult
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.embedding import HashEmbeddingModel


def hit(document: str, relevance: float | None, index: int = 0) -> VectorSearchResult:
    chunk = Chunk(
        content=TextBlock(text=f"{document} {index}"),
        source=document,
        chunk_index=index,
        total_chunks=index + 1,
    )
    return VectorSearchResult(
        score=relevance or 0.0, document_id=document, chunk=chunk, relevance=relevance
    )


def shown(hits: list[VectorSearchResult]) -> list[tuple[str, float | None]]:
    return [(h.document_id, h.relevance) for h in hits]


def test_a_long_document_yields_its_later_places_to_other_relevant_documents() -> None:
    ranked = [hit("long", 0.9, 0), hit("long", 0.85, 1), hit("long", 0.8, 2), hit("other", 0.4)]
    ranked.append(hit("noise", 0.1))
    assert shown(spread_documents(ranked, 3)) == [("long", 0.9), ("long", 0.85), ("other", 0.4)]


def test_one_relevant_document_keeps_its_passages_over_irrelevant_ones() -> None:
    ranked = [hit("long", 0.9, 0), hit("long", 0.85, 1), hit("long", 0.8, 2), hit("b", 0.1)]
    assert shown(spread_documents(ranked, 3)) == shown(ranked[:3])


def test_hits_without_relevance_keep_their_places() -> None:
    ranked = [hit("a", None, 0), hit("a", None, 1), hit("b", None)]
    assert spread_documents(ranked, 2) == ranked[:2]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from("abcdef"), st.floats(min_value=0, max_value=1)), max_size=30
    ),
    st.integers(min_value=1, max_value=12),
)
def test_spreading_picks_a_subsequence_and_shows_every_relevant_document(
    found: list[tuple[str, float]], top_k: int
) -> None:
    ordered = sorted(found, key=lambda item: -item[1])
    ranked = [hit(document, value, n) for n, (document, value) in enumerate(ordered)]
    spread = spread_documents(ranked, top_k)
    assert len(spread) == min(top_k, len(ranked))
    positions = [ranked.index(h) for h in spread]
    assert positions == sorted(positions)  # in the ranked order: relevance never rises
    relevant = list(dict.fromkeys(h.document_id for h in ranked if h.relevance >= SPREAD_FLOOR))  # type: ignore[operator]
    if len(relevant) <= top_k:
        assert set(relevant) <= {h.document_id for h in spread}


WORDS = [
    "pandas",
    "bamboo",
    "rocket",
    "kerosene",
    "bread",
    "yeast",
    "port",
    "8731",
    "404",
    "v2.0.11",
    "forest",
    "river",
    "okapi",
]


@pytest.mark.parametrize("seed", range(4))
async def test_relevance_never_rises_down_any_list(seed: int) -> None:
    """Random corpora and queries: every option of `KnowledgeBase.search` lists hits with
    relevance that never rises, and the agent tool's merge keeps that order."""
    rng = random.Random(seed)
    model = HashEmbeddingModel(dimensions=16)
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase("random", "random", model, store, "random")
        for n in range(25):
            count = rng.randint(1, 3)
            chunks = [
                Chunk(
                    content=TextBlock(text=" ".join(rng.choices(WORDS, k=rng.randint(2, 14)))),
                    source=f"d{n}.txt",
                    chunk_index=index,
                    total_chunks=count,
                )
                for index in range(count)
            ]
            await kb.insert_document(chunks, document_id=f"d{n}")
        options: list[dict[str, object]] = [
            {},
            {"mode": "dense"},
            {"mode": "sparse"},
            {"max_per_document": 1},
            {"max_per_document": 2, "mode": "sparse"},
            {"diversity": 0.5},
            {"min_relevance": 0.05},
            {"context": 1},
            {"context": 1, "max_per_document": 1},
        ]
        for _ in range(6):
            queries = [" ".join(rng.choices(WORDS, k=rng.randint(1, 4))) for _ in range(2)]
            for option in options:
                for asked in (queries[0], queries):
                    hits = await kb.search(asked, top_k=8, **option)  # type: ignore[arg-type]
                    values = [h.relevance for h in hits]
                    assert None not in values, option
                    assert values == sorted(values, reverse=True), (option, asked, values)  # type: ignore[type-var]
            merged = await search_and_fuse([kb], queries[:1], 8, None)
            library = await kb.search(queries[0], top_k=8)
            assert [h.result for h in merged.hits] == library


async def test_several_knowledge_bases_merge_by_relevance() -> None:
    model = HashEmbeddingModel(dimensions=16)
    async with QdrantStore(location=":memory:") as store:
        bases = []
        for name, texts in (
            ("left", ["pandas eat bamboo", "rockets burn kerosene"]),
            ("right", ["pandas eat bamboo in the forest", "bread needs yeast"]),
        ):
            kb = KnowledgeBase(name, name, model, store, name)
            for n, text in enumerate(texts):
                chunk = Chunk(
                    content=TextBlock(text=text), source=f"{n}.txt", chunk_index=0, total_chunks=1
                )
                await kb.insert_document([chunk], document_id=f"{name}{n}")
            bases.append(kb)
        merged = await search_and_fuse(bases, ["pandas bamboo forest"], 4, None)
        values = [h.result.relevance for h in merged.hits]
        assert values == sorted(values, reverse=True)  # type: ignore[type-var]
        assert {h.knowledge_base for h in merged.hits} == {"left", "right"}
