"""Other frameworks' metadata filters in Archivist's form (`SearchOptions.filters`).

A framework's filter is read as comparisons that must all hold, each `(key, operator,
value)` on a passage's metadata; `comparisons_filter` turns them into `paths` and `where`.
What Archivist cannot filter inside the store, before ranking (OR, NOT, `!=`, keys that are
not chunk metadata), is refused rather than applied to the hits afterwards.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable
from typing import Any

from archivist.errors import InvalidArgumentError

__all__ = ["Comparison", "comparisons_filter", "refused"]

Comparison = tuple[str, str, Any]
"""A metadata key, an operator (`==`, `in`, `>`, `>=`, `<`, `<=`) and the value."""
BOUNDS = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}
"""Comparison operators as `Range` bounds."""
PLACE_KEYS = frozenset({"document_id", "chunk_index", "citation"})
"""Keys of a passage's metadata that say where it is, and are not chunk metadata."""


def comparisons_filter(comparisons: Iterable[Comparison]) -> dict[str, Any]:
    """The filter under which every comparison holds: `==` and bounds (numbers or ISO dates)
    on chunk metadata such as `page`, and `==` or `in` on `source` (the file name)."""
    where: dict[str, Any] = {}
    paths: list[str] = []
    for key, operator, value in comparisons:
        if key in PLACE_KEYS:
            raise refused(f"cannot filter on {key!r}; filter on chunk metadata or source")
        if key == "source" and operator in ("==", "in"):
            names = value if operator == "in" else [value]
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise refused(f"source {operator} takes file names")
            paths.extend(glob.escape(name) for name in names)
        elif key == "source" or (operator != "==" and operator not in BOUNDS):
            raise refused(f"{operator!r} on {key!r} is not supported")
        elif operator == "==" and key not in where:
            where[key] = value
        elif operator in BOUNDS and isinstance(where.setdefault(key, {}), dict):
            where[key][BOUNDS[operator]] = value
        else:
            raise refused(f"{key!r} is both compared and bounded")
    return {"paths": paths, "where": where}


def refused(message: str) -> InvalidArgumentError:
    """A filter Archivist cannot apply, as the error naming `filters`."""
    return InvalidArgumentError(f"filters: {message}", argument="filters")
