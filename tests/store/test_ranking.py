"""The evidence every store ranks by, and the ranking itself (`archivist.rag.store.core.ranking`)."""

from __future__ import annotations

import math

import pytest

from archivist.rag.store.core.background import term_weight
from archivist.rag.store.core.bm25 import SparseVector
from archivist.rag.store.core.ranking import (
    Judged,
    cosine,
    coverage,
    grouped,
    judge,
    lexical,
    lexical_evidence,
    query_weights,
    rank,
    shown_score,
)
from archivist.rag.store.core.relevance import relevance


def test_cosine_reads_the_direction_whatever_the_lengths() -> None:
    assert cosine([3.0, 4.0], [6.0, 8.0], 5.0) == pytest.approx(1.0)
    assert cosine([2.0, 0.0], [3.0, 3.0], 2.0) == pytest.approx(1 / math.sqrt(2))
    assert cosine([1.0, 0.0], [0.0, 2.0], 1.0) == pytest.approx(0.0)
    assert cosine([0.5, 0.0], [-4.0, 0.0], 0.5) == pytest.approx(-1.0)
    assert cosine([1.0, 0.0], [0.0, 0.0], 1.0) == 0.0  # a zero vector is like nothing


def test_lexical_is_bm25_over_the_best_a_chunk_could_reach() -> None:
    assert lexical({1: 2.0}, 2.2 * 2.0) == pytest.approx(1.0)
    assert lexical({1: 2.0, 2: 2.0}, 2.2 * 2.0) == pytest.approx(0.5)
    assert lexical({1: 0.5}, 0.55) == pytest.approx(0.5)
    assert lexical({1: 0.2}, 0.22) == pytest.approx(0.5)  # a ceiling below 1
    assert lexical({1: 0.5}, 5.0) == 1.0  # clamped
    assert lexical({1: 0.5}, 0.0) == 0.0
    assert lexical({}, 3.0) is None


def test_coverage_is_the_idf_share_of_the_query_terms_held() -> None:
    assert coverage({1: 2.0, 2: 1.0}, 2.0) == pytest.approx(2 / 3)
    assert coverage({1: 0.5}, 0.25) == pytest.approx(0.5)
    assert coverage({1: 0.5}, 0.5) == pytest.approx(1.0)
    assert coverage({1: 0.5}, 2.0) == 1.0
    assert coverage({}, 1.0) is None


def test_lexical_evidence_of_stored_weights() -> None:
    idf = {1: 2.0, 2: 1.0, 3: 0.5}
    match, held = lexical_evidence(idf, SparseVector([1, 3, 9], [1.1, 0.4, 5.0]))
    assert match == pytest.approx((2.0 * 1.1 + 0.5 * 0.4) / (2.2 * 3.5))
    assert held == pytest.approx(2.5 / 3.5)
    assert lexical_evidence({}, SparseVector([1], [1.0])) == (None, None)
    assert lexical_evidence(idf, SparseVector([], [])) == (0.0, 0.0)


def test_query_weights_weigh_every_term_by_how_many_chunks_hold_it() -> None:
    weights = query_weights({1: 5}, [1, 7], chunks=20)
    assert weights == {1: term_weight(1, 5, 20), 7: term_weight(7, 0, 20)}
    assert weights[7] > weights[1]  # a term no chunk in scope holds counts, as the rarest
    assert query_weights({1: 5}, [], chunks=20) == {}


def test_judge_gives_the_relevance_of_the_signals_it_has() -> None:
    hit = judge("x", 0.7, 0.6, 0.4, 0.8)
    assert (hit.item, hit.engine_score, hit.similarity, hit.lexical, hit.coverage) == (
        "x",
        0.7,
        0.6,
        0.4,
        0.8,
    )
    assert hit.relevance == relevance(0.6, 0.4, 0.8)
    assert judge("x", 3.0, lexical=0.5).relevance == relevance(None, 0.5)
    assert judge("x", 0.4, similarity=0.4).relevance == relevance(0.4)
    assert judge("x", 1.0).relevance is None


def _judged(name: str, rel: float | None, sim: float | None = None, lex: float | None = None,
            engine: float = 0.0) -> Judged[str]:  # fmt: skip
    return Judged(name, sim, lex, None, rel, engine)


def _order(items: list[Judged[str]]) -> list[str]:
    return [j.item for j in rank(items, lambda name: (name,))]


def test_rank_is_by_relevance_then_the_evidence_then_a_fixed_key() -> None:
    assert _order([_judged("b", 0.2), _judged("a", 0.9), _judged("c", 0.5)]) == ["a", "c", "b"]
    assert _order([_judged("a", 0.5, 0.1), _judged("b", 0.5, 0.7)]) == ["b", "a"]
    assert _order([_judged("a", 0.5, 0.2, 0.1), _judged("b", 0.5, 0.2, 0.3)]) == ["b", "a"]
    same = [_judged("b", 0.5, 0.2, 0.3, engine=1.0), _judged("a", 0.5, 0.2, 0.3, engine=2.0)]
    assert _order(same) == ["a", "b"]
    assert _order([_judged("b", 0.5, 0.2, 0.3), _judged("a", 0.5, 0.2, 0.3)]) == ["a", "b"]
    # Without relevance (a distance other than Cosine): the engine's score decides.
    assert _order([_judged("a", None, engine=-3.0), _judged("b", None, engine=-1.0)]) == ["b", "a"]
    # A hit with relevance comes before one without; with a signal, before one without.
    assert _order([_judged("a", None, engine=9.0), _judged("b", 0.0)]) == ["b", "a"]
    assert _order([_judged("a", None, None), _judged("b", None, -0.5)]) == ["b", "a"]
    assert _order([_judged("a", 0.5, 0.1, None), _judged("b", 0.5, 0.1, 0.0)]) == ["b", "a"]


def test_shown_score_is_the_relevance_of_a_hybrid_hit() -> None:
    hit = _judged("a", 0.4, engine=7.0)
    assert shown_score(hit, hybrid=True) == 0.4
    assert shown_score(hit, hybrid=False) == 7.0
    assert shown_score(_judged("a", None, engine=7.0), hybrid=True) == 7.0


async def test_grouped_pages_until_full_keeping_the_cap_per_document() -> None:
    ranking = [("long", n, 0.9 - n / 100) for n in range(6)]
    ranking += [("d1", 0, 0.5), ("d2", 0, 0.4), ("long", 9, 0.3), ("d3", 0, 0.2)]
    rounds: list[tuple[tuple[str, ...], int]] = []

    async def ranked(excluded: tuple[str, ...], limit: int) -> list[Judged[tuple[str, int]]]:
        rounds.append((excluded, limit))
        kept = [(doc, n, rel) for doc, n, rel in ranking if doc not in excluded]
        return [_key(doc, n, rel) for doc, n, rel in kept[:limit]]

    found = await grouped(ranked, lambda item: item[0], lambda item: item, 4, 2)
    assert [j.item for j in found] == [("long", 0), ("long", 1), ("d1", 0), ("d2", 0)]
    assert rounds[0] == ((), 4) and rounds[1][0] == ("long",)
    rounds.clear()
    everything = await grouped(ranked, lambda item: item[0], lambda item: item, 10, 1)
    assert [j.item for j in everything] == [("long", 0), ("d1", 0), ("d2", 0), ("d3", 0)]
    assert len(rounds) == 2  # the second round came back short: nothing more matches


def _key(doc: str, n: int, rel: float) -> Judged[tuple[str, int]]:
    return Judged((doc, n), None, None, None, rel, rel)
