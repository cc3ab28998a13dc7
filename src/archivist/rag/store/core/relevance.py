"""`relevance`: a search hit's estimated probability of being relevant, in every mode.

Ranking scores cannot be compared across queries or modes (similarities, BM25 sums that grow
with the query's length and the collection's IDF). Relevance is computed from signals whose
scale does not depend on the query or the collection (`archivist.rag.store.core.ranking`),
by the curves of the search's embedding model and script (`archivist.embedding.relevance`).
What a hit lacks is not guessed: a hybrid hit without text (an image) is judged by its
similarity alone, and a store that reports no signal leaves `relevance` None.
"""

from __future__ import annotations

from archivist.embedding.relevance import DEFAULT_CURVES, RelevanceCurves
from archivist.errors import InvalidArgumentError

DEFAULT_MIN_RELEVANCE = 0.25
"""A suggested `min_relevance` (`RAGMiddleware` applies none unless given one): a passage
judged at least a one-in-four chance of being relevant."""


def relevance(
    similarity: float | None = None,
    lexical: float | None = None,
    coverage: float | None = None,
    curves: RelevanceCurves = DEFAULT_CURVES,
) -> float | None:
    """The calibrated probability of relevance from the signals a hit has; None from none."""
    return curves.relevance(similarity, lexical, coverage)


def check_min_relevance(value: object) -> float | None:
    """`value` if it is None or a number from 0 to 1; ValueError naming it otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidArgumentError(
            f"min_relevance must be a number from 0 to 1, got {value!r}", argument="min_relevance"
        )
    return float(value)
