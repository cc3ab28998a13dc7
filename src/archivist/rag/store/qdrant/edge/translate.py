"""Engine-neutral conditions, index kinds and distances as qdrant_edge objects."""

from __future__ import annotations

from typing import Any

import qdrant_edge as edge

from archivist.rag.store.qdrant.filter import (
    Absent,
    AnyOf,
    Between,
    Condition,
    Either,
    HasId,
    IndexKind,
    Where,
)
from archivist.validation import FilterValue

_SCHEMAS: dict[IndexKind, edge.PayloadSchemaType | edge.KeywordIndexParams] = {
    # On disk (memory-mapped): a keyword index over every chunk (the tenant, the document)
    # otherwise holds its maps in RAM, growing with the collection.
    "keyword": edge.KeywordIndexParams(on_disk=True),
    "integer": edge.PayloadSchemaType.Integer,
    "bool": edge.PayloadSchemaType.Bool,
    "float": edge.PayloadSchemaType.Float,
    "datetime": edge.PayloadSchemaType.Datetime,
}

_DISTANCES: dict[str, edge.Distance] = {
    "Cosine": edge.Distance.Cosine,
    "Dot": edge.Distance.Dot,
    "Euclid": edge.Distance.Euclid,
    "Manhattan": edge.Distance.Manhattan,
}


def edge_distance(distance: str) -> edge.Distance:
    """The qdrant_edge distance named `distance`."""
    return _DISTANCES[distance]


def edge_schema(kind: IndexKind) -> edge.PayloadSchemaType | edge.KeywordIndexParams:
    """The qdrant_edge payload index type of `kind`."""
    return _SCHEMAS[kind]


def _match_value(value: FilterValue) -> edge.MatchValue:
    if isinstance(value, bool):
        # qdrant-edge-py 0.9 reads a Python bool as the integer 0/1 (so True would match 1 and
        # never a stored true); numpy.bool_ reaches it as a boolean. Imported here, as only a
        # boolean filter needs it.
        import numpy as np

        return edge.MatchValue(np.bool_(value))  # type: ignore[arg-type]
    return edge.MatchValue(value)


def _condition(
    match: Condition,
) -> edge.FieldCondition | edge.IsEmptyCondition | edge.HasIdCondition | edge.Filter:
    if isinstance(match, HasId):
        return edge.HasIdCondition(set(match.ids))
    if isinstance(match, Either):
        return edge.Filter(
            should=[edge_filter(option) or edge.Filter() for option in match.options]
        )
    if isinstance(match, Between):
        bounds: dict[str, Any] = {
            "gte": match.gte,
            "gt": match.gt,
            "lte": match.lte,
            "lt": match.lt,
        }
        span = edge.RangeDateTime(**bounds) if match.dates else edge.RangeFloat(**bounds)
        return edge.FieldCondition(key=match.key, range=span)
    if isinstance(match, Absent):
        return edge.IsEmptyCondition(key=match.key)
    if isinstance(match, AnyOf):
        values: list[str] | list[int] = list(match.values)  # type: ignore[assignment]
        return edge.FieldCondition(key=match.key, match=edge.MatchAny(values))
    return edge.FieldCondition(key=match.key, match=_match_value(match.value))


def edge_filter(where: Where) -> edge.Filter | None:
    """The qdrant_edge filter for `where`, or None when it has no condition."""
    if not where.must and not where.must_not:
        return None
    return edge.Filter(
        must=[_condition(match) for match in where.must] or None,
        must_not=[_condition(match) for match in where.must_not] or None,
    )
