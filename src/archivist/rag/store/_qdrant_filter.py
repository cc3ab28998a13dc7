"""Metadata filters: validated `{key: value}` equality turned into engine-neutral conditions.

A value of None means "the key is absent" (Qdrant's IsEmpty: no value, null or []), which is
how a scope such as "no tenant" is expressed natively.

Both Qdrant backends translate a `Where` into their native filter; nothing is filtered in Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from archivist.rag.store._qdrant_layout import METADATA

IndexKind = Literal["keyword", "integer", "bool"]
FilterValue = str | int | bool

_INT64 = range(-(2**63), 2**63)


@dataclass(frozen=True)
class Match:
    """Payload field at `key` (a Qdrant JSON path) equals `value`, with the same JSON type."""

    key: str
    value: FilterValue


@dataclass(frozen=True)
class Absent:
    """Payload field at `key` has no value: missing, null or an empty array."""

    key: str


Condition = Match | Absent


@dataclass(frozen=True)
class Where:
    """All of `must` hold and none of `must_not` does."""

    must: tuple[Condition, ...] = ()
    must_not: tuple[Condition, ...] = ()

    def also(self, *matches: Condition) -> Where:
        """This condition with `matches` added to `must`."""
        return Where(self.must + matches, self.must_not)


def metadata_path(key: str) -> str:
    """The JSON path of chunk-metadata `key`; quoted so dots or brackets in a key stay literal."""
    return f'{METADATA}."{key}"'


def index_kind(value: FilterValue) -> IndexKind:
    """The payload index type that serves equality on `value`."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    return "keyword"


def metadata_matches(metadata_filter: Mapping[str, Any] | None) -> tuple[Condition, ...]:
    """Validated conditions for `metadata_filter` (None values: key absent); ValueError naming
    the offending key."""
    if metadata_filter is None:
        return ()
    if not isinstance(metadata_filter, Mapping):
        raise ValueError(f"metadata_filter must be a dict, got {type(metadata_filter).__name__}")
    matches: list[Condition] = []
    for key, value in metadata_filter.items():
        if not isinstance(key, str) or not key or '"' in key or "\\" in key:
            raise ValueError(
                f"metadata_filter key {key!r} is invalid: use a non-empty str without '\"' or '\\'"
            )
        if value is None:
            matches.append(Absent(metadata_path(key)))
            continue
        if not isinstance(value, str | int) or (
            isinstance(value, int) and not isinstance(value, bool) and value not in _INT64
        ):
            raise ValueError(
                f"metadata_filter[{key!r}] = {value!r} is not supported: "
                "values must be str, bool, a 64-bit int or None (key absent)"
            )
        matches.append(Match(metadata_path(key), value))
    return tuple(matches)


def satisfies(
    metadata: Mapping[str, Any], metadata_filter: Mapping[str, FilterValue | None]
) -> bool:
    """Whether chunk `metadata` (about to be written) is inside `metadata_filter`, type-strictly;
    a None in the filter wants the key absent (or null)."""
    for key, wanted in metadata_filter.items():
        if wanted is None:
            if metadata.get(key) is not None:
                return False
            continue
        if key not in metadata:
            return False
        value = metadata[key]
        if type(value) is not type(wanted) or value != wanted:
            return False
    return True
