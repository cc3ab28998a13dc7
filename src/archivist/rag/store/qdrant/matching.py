"""A search filter's `match` condition tree as Qdrant conditions on chunk metadata.

A group of all conditions joins their `must` and `must_not` lists; a group of any is an
`Either`; ne / nin are the `must_not` of eq / in (so an absent key passes). Numbers compare as
numbers through a float range (eq as gte = lte, which matches stored ints and floats alike and
never a bool); strings and bools match by value.

Qdrant reads a condition through the key's payload index when it has one: numbers get a float
index here, but a key already given an integer index (equality on an int in a metadata filter
or `where`) misses non-integer numbers, and one given a datetime index (`since`, date ranges)
compares numbers with its instants.
"""

from __future__ import annotations

from archivist.rag.store.qdrant.filter import (
    AnyOf,
    Between,
    Condition,
    Either,
    IndexKind,
    Match,
    Where,
    metadata_path,
)
from archivist.rag.store.search_filter import RANGE_OPERATORS, AllOf, Compare, Scalar
from archivist.rag.store.search_filter import AnyOf as AnyCondition


def match_where(condition: Compare | AllOf | AnyCondition) -> Where:
    """`condition` as native conditions."""
    if isinstance(condition, AllOf):
        parts = [match_where(part) for part in condition.all]
        return Where(
            tuple(c for part in parts for c in part.must),
            tuple(c for part in parts for c in part.must_not),
        )
    if isinstance(condition, AnyCondition):
        return Where((Either(tuple(match_where(part) for part in condition.any)),))
    field = metadata_path(condition.key)
    if condition.op in RANGE_OPERATORS:
        assert isinstance(condition.value, int | float)
        bound, op = float(condition.value), condition.op
        return Where(
            (
                Between(
                    field,
                    gte=bound if op == "gte" else None,
                    gt=bound if op == "gt" else None,
                    lte=bound if op == "lte" else None,
                    lt=bound if op == "lt" else None,
                ),
            )
        )
    equal = _equal_to_any(field, condition.values)
    return Where(must_not=(equal,)) if condition.op in ("ne", "nin") else Where((equal,))


def match_indexes(condition: Compare | AllOf | AnyCondition) -> dict[str, IndexKind]:
    """A float index for each key `condition` compares numbers on (it serves ints and floats
    alike); strings and bools are matched by any index the key has, else by reading payloads."""
    if isinstance(condition, AllOf | AnyCondition):
        return {key: kind for part in condition.parts for key, kind in match_indexes(part).items()}
    numbers = any(isinstance(v, int | float) and not isinstance(v, bool) for v in condition.values)
    return {metadata_path(condition.key): "float"} if numbers else {}


def _equal_to_any(field: str, values: tuple[Scalar, ...]) -> Condition:
    """The value at `field` (or one of its items) equals one of `values`."""
    texts = tuple(dict.fromkeys(v for v in values if isinstance(v, str)))
    options: list[Condition] = []
    if texts:
        options.append(Match(field, texts[0]) if len(texts) == 1 else AnyOf(field, texts))
    options += [Match(field, v) for v in dict.fromkeys(v for v in values if isinstance(v, bool))]
    numbers = dict.fromkeys(
        float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)
    )
    options += [Between(field, gte=number, lte=number) for number in numbers]
    if len(options) == 1:
        return options[0]
    return Either(tuple(Where((option,)) for option in options))
