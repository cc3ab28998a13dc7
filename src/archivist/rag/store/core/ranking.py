"""How every store orders its hits: by relevance, computed from the same evidence everywhere.

A search gathers candidates (hybrid: the best `depth` chunks by dense similarity and the best
`depth` by BM25, together), then judges each one by what is known of it (`Evidence`):

- `similarity`: the cosine between the query's and the chunk's dense vectors;
- `lexical`: the chunk's BM25 score for the query divided by the highest score a chunk could
  reach, `(k1 + 1) * sum(weights)` over the query's terms, each weighted by its IDF with the
  language's background counted in (`query_weights`): 0..1 whatever the query's length, and
  about the same for one passage in a collection of five documents or of five thousand;
- `coverage`: the share of that weight sum the chunk's terms make up (which of the query's
  terms it holds at all, however often).

The search's `RelevanceCurves` (`archivist.embedding.relevance`, chosen by the embedding model
and the query's script) map the evidence of the search's mode to a probability, and
hits are ranked by it: the first hit is the one most likely relevant, and relevance never
rises down a result list. Stores compute the evidence from their own stored vectors and term
weights and rank with `rank`, so a search gives the same order and relevance in every store.
"""

from __future__ import annotations

import math
import operator
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from archivist.embedding.relevance import DEFAULT_CURVES, RelevanceCurves
from archivist.rag.store.core.background import term_weight
from archivist.rag.store.core.bm25 import K1, SparseVector

T = TypeVar("T")


@dataclass(frozen=True)
class Judged(Generic[T]):
    """A candidate with its evidence, its relevance and the engine's score (higher better)."""

    item: T
    similarity: float | None
    lexical: float | None
    coverage: float | None
    relevance: float | None
    engine_score: float


def query_weights(held: Mapping[int, int], terms: Iterable[int], chunks: int) -> dict[int, float]:
    """The weight of each of the query's `terms` in the lexical evidence: its IDF with the
    language's background counted in (`background.term_weight`), from how many of the
    collection's `chunks` chunks hold it (`held`, the terms some chunk in scope holds; any
    other counts as held by none, so nothing of another tenant shows). Every term counts:
    a passage lacking a word of the query lacks part of what was asked, however small the
    collection."""
    return {term: term_weight(term, held.get(term, 0), chunks) for term in terms}


def cosine(query: Sequence[float], stored: Sequence[float], query_norm: float) -> float:
    """The cosine similarity of a query vector (of norm `query_norm`) and a stored vector.

    In Python, not numpy: a page of candidates is small, and a process that only searches (a
    CLI search answered from the embedding cache) then never imports numpy."""
    norm = math.hypot(*stored) or 1.0
    dot: float = sum(map(operator.mul, stored, query))
    return dot / ((query_norm or 1.0) * norm)


def lexical(query_idf: Mapping[int, float], score: float) -> float | None:
    """A BM25 `score` as a share of the best a chunk could reach for this query (0..1);
    None when no query term is known in scope."""
    ceiling = (K1 + 1.0) * sum(query_idf.values())
    return min(1.0, max(0.0, score / ceiling)) if ceiling > 0 else None


def coverage(query_idf: Mapping[int, float], held: float) -> float | None:
    """`held`, the IDF sum of the query terms a chunk holds, as a share of all known query
    terms' (0..1); None when no query term is known in scope."""
    mass = sum(query_idf.values())
    return min(1.0, max(0.0, held / mass)) if mass > 0 else None


def lexical_evidence(
    query_idf: Mapping[int, float], stored: SparseVector
) -> tuple[float | None, float | None]:
    """(`lexical`, `coverage`) of a chunk stored with the BM25 vector `stored` (term ids in
    ascending order, as `Bm25Encoder.document` writes them): each query term is looked up by
    bisection, so a long chunk costs no more than a short one."""
    indices, values = stored.indices, stored.values
    score = held = 0.0
    for term, idf in query_idf.items():
        at = bisect_left(indices, term)
        if at < len(indices) and indices[at] == term and values[at]:
            score += idf * values[at]
            held += idf
    return lexical(query_idf, score), coverage(query_idf, held)


def judge(
    item: T,
    engine_score: float,
    similarity: float | None = None,
    lexical: float | None = None,
    coverage: float | None = None,
    curves: RelevanceCurves = DEFAULT_CURVES,
) -> Judged[T]:
    """`item` with its evidence and the relevance `curves` give it."""
    return Judged(
        item,
        similarity,
        lexical,
        coverage,
        curves.relevance(similarity, lexical, coverage),
        engine_score,
    )


def shown_score(hit: Judged[T], hybrid: bool) -> float:
    """A hit's `score`: its relevance in a hybrid search, else the engine's score (the
    similarity of a dense search, the BM25 sum of a sparse one)."""
    if hybrid and hit.relevance is not None:
        return hit.relevance
    return hit.engine_score


def rank(judged: Iterable[Judged[T]], tie_break: Callable[[T], tuple[Any, ...]]) -> list[Judged[T]]:
    """`judged` best first: by relevance, then similarity, lexical match and the engine's
    score, then `tie_break` (a key that is the same in every store, so that equal hits come
    in one order)."""
    return sorted(
        judged,
        key=lambda j: (
            -_or(j.relevance, -1.0),
            -_or(j.similarity, -2.0),
            -_or(j.lexical, -1.0),
            -j.engine_score,
            tie_break(j.item),
        ),
    )


def _or(value: float | None, missing: float) -> float:
    return missing if value is None else value


async def grouped(
    ranked: Callable[[tuple[str, ...], int], Awaitable[list[Judged[T]]]],
    document: Callable[[T], str],
    tie_break: Callable[[T], tuple[Any, ...]],
    limit: int,
    group_size: int,
) -> list[Judged[T]]:
    """The best `limit` hits with at most `group_size` of one document, best first.

    `ranked(excluded, n)` is one round of the search: its best `n` hits outside the documents
    `excluded`. Rounds page through the ranking, each excluding the documents already full,
    until `limit` hits are kept or the matching hits run out."""
    kept: dict[tuple[Any, ...], Judged[T]] = {}
    per_document: dict[str, int] = {}
    full: list[str] = []
    while True:
        open_kept = sum(count for doc, count in per_document.items() if doc not in full)
        wanted = limit - len(kept) + open_kept
        found = await ranked(tuple(full), wanted)
        for hit in found:
            doc, key = document(hit.item), tie_break(hit.item)
            if key in kept or per_document.get(doc, 0) >= group_size:
                continue
            kept[key] = hit
            per_document[doc] = per_document.get(doc, 0) + 1
            if per_document[doc] == group_size:
                full.append(doc)
            if len(kept) == limit:
                break
        if len(kept) == limit or len(found) < wanted:
            return rank(kept.values(), tie_break)
