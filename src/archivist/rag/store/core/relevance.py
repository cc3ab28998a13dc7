"""`relevance`: a search hit's estimated probability of being relevant, in every mode.

Ranking scores cannot be compared across queries or modes (similarities, BM25 sums that grow
with the query's length and the collection's IDF). Relevance is computed from signals whose
scale does not depend on the query or the collection (`archivist.rag.store.core.ranking`):

- `similarity`: the cosine between the query's and the chunk's dense vectors;
- `lexical`: the chunk's BM25 score as a share of the best score a chunk could reach for the
  query; each query term weighs by its IDF, so a rare word counts for more than one most
  chunks hold (a question word, a particle), and only terms that some chunk in scope holds
  count (a CJK bigram that straddles two words, or a word no document uses, tells nothing
  about this chunk). Language-neutral by construction;
- `coverage`: the IDF-weighted share of the query's terms the chunk holds at all.

Each mode maps the signals it ranks by to a probability through a logistic curve fitted on
relevance judgments (BEIR SciFact *train* split, each mode's candidates over the whole
corpus; never the test queries reported): a hybrid hit by all three, a dense hit by its
similarity, a BM25 hit by its lexical match, so relevance orders each mode's hits as the
mode ranks them. `benchmarks/calibrate_relevance.py` refits and prints these numbers and
checks them on the test queries. What a hit lacks is not guessed: a hybrid hit without
text (an image) is judged by its similarity alone, and a store that reports no signal
leaves `relevance` None.
"""

from __future__ import annotations

import math

from archivist.errors import InvalidArgumentError

HYBRID = (10.33, 5.14, 2.45, -10.56)
"""(similarity, lexical, coverage weights, bias) of a hybrid hit."""
DENSE = (16.69, -11.94)
"""(similarity weight, bias) of a dense hit."""
SPARSE = (15.93, -7.40)
"""(lexical weight, bias) of a BM25 hit."""

DEFAULT_MIN_RELEVANCE = 0.25
"""A suggested `min_relevance` (`RAGMiddleware` applies none unless given one): a passage
judged at least a one-in-four chance of being relevant."""


def relevance(
    similarity: float | None = None,
    lexical: float | None = None,
    coverage: float | None = None,
) -> float | None:
    """The calibrated probability of relevance from the signals a hit has; None from none."""
    if similarity is not None and lexical is not None and coverage is not None:
        weight_s, weight_l, weight_c, bias = HYBRID
        return _logistic(weight_s * similarity + weight_l * lexical + weight_c * coverage + bias)
    if similarity is not None:
        weight, bias = DENSE
        return _logistic(weight * similarity + bias)
    if lexical is not None:
        weight, bias = SPARSE
        return _logistic(weight * lexical + bias)
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
