"""Metadata filters: validated `{key: value}` equality turned into engine-neutral conditions.

A value of None means "the key is absent" (Qdrant's IsEmpty: no value, null or []), which is
how a scope such as "no tenant" is expressed natively.

Both Qdrant backends translate a `Where` into their native filter; nothing is filtered in Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from archivist.rag.store.core.layout import METADATA
from archivist.validation import FilterValue, check_metadata_filter

IndexKind = Literal["keyword", "integer", "bool", "float", "datetime"]


@dataclass(frozen=True)
class Match:
    """Payload field at `key` (a Qdrant JSON path) equals `value`, with the same JSON type."""

    key: str
    value: FilterValue


@dataclass(frozen=True)
class Absent:
    """Payload field at `key` has no value: missing, null or an empty array."""

    key: str


@dataclass(frozen=True)
class AnyOf:
    """Payload field at `key` equals one of `values` (keywords or integers)."""

    key: str
    values: tuple[str, ...] | tuple[int, ...]


@dataclass(frozen=True)
class Between:
    """Payload field at `key` lies within the bounds given: numbers, or (`dates`) ISO 8601
    date-times compared as times."""

    key: str
    gte: float | str | None = None
    gt: float | str | None = None
    lte: float | str | None = None
    lt: float | str | None = None
    dates: bool = False


@dataclass(frozen=True)
class Either:
    """At least one of `options` holds."""

    options: tuple[Where, ...]


@dataclass(frozen=True)
class HasId:
    """The point's id is one of `ids`."""

    ids: tuple[str, ...]


Condition = Match | Absent | AnyOf | Between | Either | HasId


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
    """Conditions for `metadata_filter` (None values: key absent), checked by
    `archivist.validation.check_metadata_filter`."""
    checked = check_metadata_filter(metadata_filter) or {}
    return tuple(
        Absent(metadata_path(key)) if value is None else Match(metadata_path(key), value)
        for key, value in checked.items()
    )
