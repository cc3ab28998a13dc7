"""A hybrid search reads stored BM25 vectors only for the candidates that can still reach its
top k, and ranks exactly as when it reads every candidate's."""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from hypothesis import given, settings
from hypothesis import strategies as st

from archivist.message import Base64Source, DataBlock, TextBlock
from archivist.rag.document import Chunk
from archivist.rag.record import VectorRecord
from archivist.rag.store.core.contenders import Known, contenders
from archivist.rag.store.core.ranking import (
    Judged,
    cosine,
    judge,
    lexical,
    lexical_evidence,
    rank,
)
from archivist.rag.store.core.relevance import relevance
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant.backend import SPARSE_VECTOR, ScoredPoint, SearchRequest
from archivist.rag.store.qdrant.filter import HasId, Where
from archivist.rag.store.qdrant.hybrid import tie_break

DIMENSIONS = 8
WORDS = [f"w{n}" for n in range(40)]

# ---- the bounds alone: whatever the hidden evidence, the true top k is kept


@st.composite
def _truths(draw: st.DrawFn) -> tuple[list[tuple[float, float | None, float | None]], int]:
    """Hidden (similarity, lexical, coverage) of each candidate; lexical None: no terms."""
    count = draw(st.integers(1, 40))
    unit = st.floats(0.0, 1.0, allow_nan=False)
    truths = []
    for _ in range(count):
        similarity = draw(st.floats(-1.0, 1.0, allow_nan=False))
        if draw(st.booleans()):
            truths.append((similarity, None, None))
            continue
        match = draw(unit)
        truths.append((similarity, match, draw(st.floats(match, 1.0, allow_nan=False))))
    return truths, draw(st.integers(1, 10))


@settings(max_examples=500, deadline=None)
@given(_truths(), st.integers(1, 40), st.integers(1, 40), st.booleans())
def test_the_true_top_k_is_always_among_the_contenders(
    drawn: tuple[list[tuple[float, float | None, float | None]], int],
    dense_depth: int,
    sparse_depth: int,
    dense_side_full: bool,
) -> None:
    truths, limit = drawn
    query_idf = {1: 1.0, 2: 2.0}
    ceiling = 2.2 * 3.0  # (k1 + 1) * sum(IDF): lexical share -> BM25 score
    similar = sorted(range(len(truths)), key=lambda n: -truths[n][0])[:dense_depth]
    holding = [n for n in range(len(truths)) if (truths[n][1] or 0) > 0]
    matching = sorted(holding, key=lambda n: -(truths[n][1] or 0))[:sparse_depth]
    found = set(similar) | set(matching)
    farthest = min(truths[n][0] for n in similar) if dense_side_full else 1.0
    bm25_below = (
        min((truths[n][1] or 0) for n in matching) * ceiling
        if len(matching) == sparse_depth
        else 0.0
    )
    known = {
        n: Known(
            (truths[n][0], truths[n][0]) if n in similar else (-1.0, farthest),
            (truths[n][1] or 0) * ceiling if n in matching else None,
        )
        for n in found
    }
    judged = [
        judge(n, truths[n][0], truths[n][0], truths[n][1], truths[n][2])
        if truths[n][1] is not None
        else judge(n, truths[n][0], truths[n][0])
        for n in found
    ]
    best = {hit.item for hit in rank(judged, lambda n: (n,))[:limit]}
    assert best <= contenders(known, query_idf, bm25_below, limit)


def test_candidates_that_cannot_reach_the_top_are_left_out() -> None:
    query_idf = {1: 1.0, 2: 1.0}
    ceiling = 2.2 * 2.0
    known = {
        "near and matching": Known((0.9, 0.9), 0.8 * ceiling),
        "near": Known((0.85, 0.85), None),
        "far": Known((0.1, 0.1), None),
        "far, weak match": Known((-1.0, 0.1), 0.05 * ceiling),
    }
    assert contenders(known, query_idf, 0.05 * ceiling, 1) == {"near and matching"}
    assert contenders(known, query_idf, 0.05 * ceiling, 2) == {"near and matching", "near"}
    # With no term known in scope, relevance is the similarity's alone: BM25 found the
    # last one, and it may be as near as 0.95.
    known["far, weak match"] = Known((-1.0, 0.95), 0.05 * ceiling)
    assert contenders(known, {}, 0.0, 2) == {"near and matching", "near", "far, weak match"}
    assert contenders(known, {}, 0.0, 1) == {"near and matching", "far, weak match"}
    assert contenders(known, query_idf, 0.0, 4) == set(known)


def test_a_candidate_without_terms_is_bounded_by_its_similarity_alone() -> None:
    """An image the dense side found is judged by similarity alone, which may rank it above
    text chunks with the same similarity that lack the query's words."""
    query_idf = {1: 1.0}
    alone = relevance(0.8)
    without_words = relevance(0.8, 0.0, 0.0)
    assert alone is not None and without_words is not None and alone != without_words
    known = {"image?": Known((0.8, 0.8), None), "text": Known((0.79, 0.79), 0.0001)}
    assert "image?" in contenders(known, query_idf, 0.0, 1)


# ---- end to end: the store's ranking equals judging every candidate


def _reference_judged(
    hit: ScoredPoint,
    similarity: float | None,
    query_idf: dict[int, float],
) -> Judged[ScoredPoint]:
    match, held = lexical_evidence(query_idf, hit.weights) if hit.weights else (None, None)
    return judge(hit, similarity or 0.0, similarity, match, held)


async def _reference(
    store: QdrantStore,
    where: Where,
    dense: list[float],
    text: str,
    limit: int,
    depth: int,
    collection: str = "docs",
) -> list[tuple[str, float | None]]:
    """Every candidate of both sides judged from its stored vectors (no bounds)."""
    backend = store._open()
    shape = await store._shape(collection)
    assert shape is not None
    encoder = store._encoder(shape)
    sparse = encoder.query(text)
    from archivist.rag.store.qdrant.hybrid import term_weights

    query_idf = await term_weights(
        backend, collection, where, sparse, frozenset(encoder.exact(text))
    )
    by_cosine = shape.distance == "Cosine"
    vectors = (SPARSE_VECTOR,) if by_cosine else ("", SPARSE_VECTOR)
    nearest, matching = await backend.search_batch(
        collection,
        [
            SearchRequest(depth, where, dense=dense, vectors=vectors, payload=False),
            SearchRequest(depth, where, sparse=sparse, vectors=vectors, payload=False),
        ],
    )
    candidates = {hit.id: hit for hit in (*matching, *nearest)}
    if by_cosine:
        similarity = {hit.id: hit.score for hit in nearest}
        unscored = tuple(hit.id for hit in matching if hit.id not in similarity)
        if unscored:
            request = SearchRequest(
                len(unscored), where.also(HasId(unscored)), dense=dense, payload=False
            )
            similarity.update((h.id, h.score) for h in await backend.search(collection, request))
    else:
        norm = math.hypot(*dense)
        similarity = {h.id: cosine(dense, h.vector, norm) for h in candidates.values() if h.vector}
    judged = [
        _reference_judged(hit, similarity.get(point_id), query_idf)
        for point_id, hit in candidates.items()
    ]
    return [(hit.item.id, hit.relevance) for hit in rank(judged, tie_break)[:limit]]


def _corpus(rng: random.Random) -> list[VectorRecord]:
    records = []
    centres = [[rng.gauss(0, 1) for _ in range(DIMENSIONS)] for _ in range(6)]
    for n in range(400):
        centre = centres[n % len(centres)]
        vector = [c + rng.gauss(0, 0.6) for c in centre]
        tenant = "a" if n % 3 else "b"
        metadata = {"tenant_id": tenant}
        if n % 37 == 0:  # an image: no BM25 terms
            content: TextBlock | DataBlock = DataBlock(
                source=Base64Source(data="iVBORw0K", media_type="image/png")
            )
        else:
            words = rng.choices(
                WORDS, weights=[1 / (k + 1) for k in range(len(WORDS))], k=rng.randint(2, 14)
            )
            content = TextBlock(text=" ".join(words))
        records.append(
            VectorRecord(
                vector=vector,
                document_id=f"d{n}",
                chunk=Chunk(
                    content=content,
                    source=f"d{n}.txt",
                    chunk_index=0,
                    total_chunks=1,
                    metadata=metadata,
                ),
            )
        )
    return records


@pytest_asyncio.fixture(params=["Cosine", "Euclid"])
async def filled(request: pytest.FixtureRequest) -> AsyncIterator[QdrantStore]:
    async with QdrantStore(location=":memory:", distance=request.param) as store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", _corpus(random.Random(7)))
        yield store


async def test_the_ranking_equals_judging_every_candidate(filled: QdrantStore) -> None:
    rng = random.Random(11)
    compared = 0
    for _ in range(40):
        dense = [rng.gauss(0, 1) for _ in range(DIMENSIONS)]
        text = " ".join(rng.sample(WORDS, rng.randint(1, 5)))
        tenant = rng.choice([None, "a", "b"])
        scope = await filled._scope("docs", {"tenant_id": tenant} if tenant else None)
        for depth in (4, 15, 60):
            filled.HYBRID_DEPTH = depth
            for limit in (1, 3, 10):
                expected = await _reference(filled, scope, dense, text, limit, max(limit, depth))
                hits = await filled.search(
                    "docs",
                    dense,
                    limit,
                    {"tenant_id": tenant} if tenant else None,
                    query_text=text,
                    mode="hybrid",
                )
                want = [(await _document_of(filled, point), rel) for point, rel in expected]
                assert [hit.document_id for hit in hits] == [d for d, _ in want], (
                    text,
                    depth,
                    limit,
                    tenant,
                )
                for hit, (_, rel) in zip(hits, want, strict=True):
                    assert hit.relevance == pytest.approx(rel, abs=1e-12)
                compared += 1
    assert compared == 40 * 9


async def _document_of(store: QdrantStore, point_id: str) -> str:
    payloads = await store._open().retrieve("docs", [point_id])
    return str(payloads[point_id]["document_id"])


def test_lexical_share_is_what_the_bounds_assume() -> None:
    """The bounds read a lexical share from the engine's BM25 score, as `lexical` does."""
    assert lexical({1: 1.0, 2: 1.0}, 2.2) == pytest.approx(0.5)
