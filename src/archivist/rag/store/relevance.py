"""`relevance`: a search hit's estimated probability of being relevant, the same in every mode.

Ranking scores cannot be compared across queries or modes (fused scores, BM25 sums that grow
with the query's length and the collection's IDF). Relevance is computed from two signals whose
scale does not depend on the query or the collection:

- `similarity`: the cosine between the query's and the chunk's dense vectors, when the
  embedding model can read the query (every mode but BM25-only);
- `coverage`: the share of the query's BM25 terms (stemmed words, CJK words and bigrams, whole
  identifiers) that the chunk contains, each term weighted by its IDF, so a rare word counts
  for more than one most chunks hold (a question word, a particle); only terms that some
  chunk in scope holds count (a CJK bigram that straddles two words, or a word no document
  uses, tells nothing about this chunk). Language-neutral by construction.

Each available combination maps to a probability through a logistic curve fitted on held-out
relevance judgments (BEIR SciFact *train* split, first 300 queries, never the test queries
reported; `benchmarks/calibrate_relevance.py --train 300 --extra 1000` refits and prints these
numbers, and compares them with the unweighted share of terms on the test queries). What a
hit lacks is not guessed: a BM25-only hit is judged by coverage alone, a store that reports
neither signal leaves `relevance` None.
"""

from __future__ import annotations

import math

from archivist.errors import InvalidArgumentError

BOTH = (8.62, 4.07, -7.52)
"""(similarity weight, coverage weight, bias) with both signals."""
SIMILARITY_ONLY = (12.57, -8.14)
"""(similarity weight, bias) for a hit with no coverage (a dense-only store)."""
COVERAGE_ONLY = (6.50, -4.51)
"""(coverage weight, bias) for a BM25-only hit."""

DEFAULT_MIN_RELEVANCE = 0.25
"""A suggested `min_relevance` (`RAGMiddleware` applies none unless given one): a passage
judged at least a one-in-four chance of being relevant (measured in REPORT.md, issue 23)."""


def relevance(similarity: float | None, coverage: float | None) -> float | None:
    """The calibrated probability of relevance from what is known; None from nothing."""
    if similarity is not None and coverage is not None:
        weight_s, weight_c, bias = BOTH
        return _logistic(weight_s * similarity + weight_c * coverage + bias)
    if similarity is not None:
        weight, bias = SIMILARITY_ONLY
        return _logistic(weight * similarity + bias)
    if coverage is not None:
        weight, bias = COVERAGE_ONLY
        return _logistic(weight * coverage + bias)
    return None


def check_min_relevance(value: object) -> float | None:
    """`value` if it is None or a number from 0 to 1; ValueError naming it otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidArgumentError(
            f"min_relevance must be a number from 0 to 1, got {value!r}", argument="min_relevance"
        )
    return float(value)


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -500 else 0.0
