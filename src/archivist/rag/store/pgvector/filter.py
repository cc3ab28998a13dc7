"""Metadata filters as SQL over the chunk table's JSONB `metadata` column.

Same meaning as the Qdrant store: `{key: value}` matches a chunk whose metadata holds `value`
at `key` with the same JSON type, or an array containing it ("match any"); `{key: None}` matches
a chunk where `key` is missing, null or an empty array. Equality is a JSONB containment (`@>`),
which the column's GIN index serves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from archivist.validation import check_metadata_filter

SqlScope = tuple[sql.Composable, list[Any]]
"""A metadata filter as an SQL condition on the chunk table and its parameters."""


def where_metadata(metadata_filter: Mapping[str, Any] | None, alias: str = "c") -> SqlScope:
    """(SQL condition, its parameters) for `metadata_filter` on table alias `alias`; TRUE when
    there is no filter. Checked by `archivist.validation.check_metadata_filter`."""
    checked = check_metadata_filter(metadata_filter) or {}
    column = sql.SQL("{}.metadata").format(sql.Identifier(alias))
    parts: list[sql.Composable] = []
    params: list[Any] = []
    for key, value in checked.items():
        if value is None:
            parts.append(
                sql.SQL("COALESCE({} -> %s, 'null'::jsonb) IN ('null'::jsonb, '[]'::jsonb)").format(
                    column
                )
            )
            params.append(key)
        else:
            parts.append(sql.SQL("({0} @> %s OR {0} @> %s)").format(column))
            params.extend([Jsonb({key: value}), Jsonb({key: [value]})])
    if not parts:
        return sql.SQL("TRUE"), []
    return sql.SQL(" AND ").join(parts), params
