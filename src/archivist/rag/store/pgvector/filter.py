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


def where_metadata(
    metadata_filter: Mapping[str, Any] | None, alias: str | None = "c", *, literal: bool = False
) -> SqlScope:
    """(SQL condition, its parameters) for `metadata_filter` on table alias `alias` (None:
    the bare column, as an index predicate names it); TRUE when there is no filter. With
    `literal`, the values are written into the SQL and there are no parameters. Checked by
    `archivist.validation.check_metadata_filter`."""
    checked = check_metadata_filter(metadata_filter) or {}
    column: sql.Composable = sql.Identifier("metadata")
    if alias is not None:
        column = sql.SQL("{}.{}").format(sql.Identifier(alias), column)
    parts: list[sql.Composable] = []
    params: list[Any] = []

    def value(given: Any) -> sql.Composable:
        if literal:
            return sql.Literal(given)
        params.append(given)
        return sql.Placeholder()

    for key, wanted in checked.items():
        if wanted is None:
            parts.append(
                sql.SQL("COALESCE({} -> {}, 'null'::jsonb) IN ('null'::jsonb, '[]'::jsonb)").format(
                    column, value(key)
                )
            )
        else:
            parts.append(
                sql.SQL("({0} @> {1} OR {0} @> {2})").format(
                    column, value(Jsonb({key: wanted})), value(Jsonb({key: [wanted]}))
                )
            )
    if not parts:
        return sql.SQL("TRUE"), []
    return sql.SQL(" AND ").join(parts), params
