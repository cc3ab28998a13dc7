"""Which hybrid candidates can still reach a search's top `limit` before their stored BM25
terms are read.

A hybrid search judges each candidate by its similarity, its lexical match and its coverage
(`ranking`), and relevance rises with each of them. Before the stored BM25 vectors are read,
each is known within bounds: the similarity exactly where the dense side scored the chunk,
else at most the lowest similarity that side returned; the lexical match exactly where the
BM25 side scored it, else at most the lowest score that side returned (none at all when it
returned fewer than it was asked for); the coverage at least the lexical match (a term's
BM25 weight is at most `k1 + 1`) and at most 1. A candidate whose highest possible relevance
is below the `limit`-th best lowest possible one cannot be in the top `limit`, so its BM25
vector need not be read: the ranking of the others is exact and the same.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from archivist.rag.store.core.ranking import lexical
from archivist.rag.store.core.relevance import relevance

K = TypeVar("K", bound=Hashable)

SLACK = 1e-4
"""Room left around a lexical match computed from the engine's score (single precision)
rather than from the stored weights."""


@dataclass(frozen=True)
class Known:
    """What one candidate's search answers told of it.

    `similarity`: its cosine similarity, lowest and highest possible (equal when a side
    scored it). `bm25`: its BM25 score when the BM25 side returned it, else None, and then
    the score is at most `contenders`' `bm25_below`."""

    similarity: tuple[float, float]
    bm25: float | None


def contenders(
    candidates: Mapping[K, Known],
    query_idf: Mapping[int, float],
    bm25_below: float,
    limit: int,
) -> set[K]:
    """The candidates that may be among the best `limit` by relevance (`rank`'s order).

    `bm25_below` bounds the BM25 score of a candidate the BM25 side did not return: the
    lowest score it returned if it returned as many as asked, else 0 (it returned every
    chunk holding a query term)."""
    if len(candidates) <= limit:
        return set(candidates)
    lowest: dict[K, float] = {}
    highest: dict[K, float] = {}
    for key, known in candidates.items():
        lowest[key], highest[key] = _relevance_bounds(known, query_idf, bm25_below)
    threshold = sorted(lowest.values(), reverse=True)[limit - 1]
    return {key for key, high in highest.items() if high >= threshold}


def _relevance_bounds(
    known: Known, query_idf: Mapping[int, float], bm25_below: float
) -> tuple[float, float]:
    """The lowest and highest relevance `known` allows."""
    low_s, high_s = known.similarity
    alone = _value(low_s, None, None), _value(high_s, None, None)
    if lexical(query_idf, 0.0) is None:  # no query term known in scope: similarity alone
        return alone
    if known.bm25 is not None:  # it holds a query term, so it has BM25 terms
        match = lexical(query_idf, known.bm25) or 0.0
        low_l, high_l = max(0.0, match - SLACK), min(1.0, match + SLACK)
        return _value(low_s, low_l, low_l), _value(high_s, high_l, 1.0)
    if bm25_below > 0:
        most = min(1.0, (lexical(query_idf, bm25_below) or 0.0) + SLACK)
        high = _value(high_s, most, 1.0)
    else:  # it holds no query term
        high = _value(high_s, 0.0, 0.0)
    # It may hold no BM25 terms at all (an image): then it is judged by similarity alone.
    return min(_value(low_s, 0.0, 0.0), alone[0]), max(high, alone[1])


def _value(similarity: float, match: float | None, held: float | None) -> float:
    found = relevance(similarity, match, held)
    assert found is not None  # a similarity is always given
    return found
