"""A search filter (paths, types, dates, metadata, match) as SQL conditions within a scope.

The same meaning as the Qdrant store's: path globs and types are matched against the
distinct `source` and `path` values within the scope (one `SELECT DISTINCT`), and then
selected by value; dates compare as instants (a stored time without an offset is UTC); a
range on numbers holds only numbers; equality is the metadata filter's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from psycopg import sql

from archivist.rag.store.pgvector.filter import SqlScope, where_metadata
from archivist.rag.store.pgvector.matching import match_sql
from archivist.rag.store.search_filter import (
    INDEXED_AT_KEY,
    MODIFIED_KEY,
    PATH_KEY,
    Range,
    SearchFilter,
)

Fetch = Callable[[sql.Composed, Sequence[Any]], Awaitable[list[dict[str, Any]]]]
"""Runs a read on the collection's chunk table; its rows."""

_OFFSET = r"(Z|[+-]\d\d(:?\d\d)?)$"


async def narrowed(
    fetch: Fetch, chunks: sql.Composable, scope: SqlScope, search_filter: SearchFilter
) -> SqlScope | None:
    """`scope` narrowed by `search_filter` on table `chunks` (alias `c`), or None when
    nothing can match."""
    conditions: list[sql.Composable] = [sql.SQL("({})").format(scope[0])]
    params: list[Any] = list(scope[1])
    if search_filter.paths or search_filter.types:
        rows = await fetch(
            sql.SQL(
                "SELECT DISTINCT c.source, c.metadata ->> %s AS path FROM {} c WHERE {}"
            ).format(chunks, scope[0]),
            [PATH_KEY, *scope[1]],
        )
        sources = sorted({r["source"] for r in rows if search_filter.path_matches(r["source"])})
        paths = sorted(
            {r["path"] for r in rows if r["path"] and search_filter.path_matches(r["path"])}
        )
        if not sources and not paths:
            return None
        conditions.append(sql.SQL("(c.source = ANY(%s) OR c.metadata ->> %s = ANY(%s))"))
        params += [sources, PATH_KEY, paths]
    if search_filter.since is not None:
        modified, indexed = _instant(MODIFIED_KEY), _instant(INDEXED_AT_KEY)
        conditions.append(
            sql.SQL("(CASE WHEN c.metadata ? %s THEN {} >= %s ELSE {} >= %s END)").format(
                modified[0], indexed[0]
            )
        )
        params += [MODIFIED_KEY, *modified[1], search_filter.since]
        params += [*indexed[1], search_filter.since]
    equal = {
        key: value for key, value in search_filter.where.items() if not isinstance(value, Range)
    }
    if equal:
        condition, values = where_metadata(equal)
        conditions.append(sql.SQL("({})").format(condition))
        params += values
    for key, wanted in search_filter.where.items():
        if isinstance(wanted, Range):
            condition, values = _between(key, wanted)
            conditions.append(condition)
            params += values
    if search_filter.match is not None:
        condition, values = match_sql(search_filter.match)
        conditions.append(condition)
        params += values
    return sql.SQL(" AND ").join(conditions), params


def _instant(key: str) -> SqlScope:
    """The metadata value at `key` as a timestamptz (NULL unless it reads as a date)."""
    text = sql.SQL("(c.metadata ->> %s)")
    return (
        sql.SQL(
            "(CASE WHEN {0} ~ '^\\d{{4}}-\\d\\d-\\d\\d' THEN CASE WHEN {0} ~ %s "
            "THEN ({0})::timestamptz ELSE ({0})::timestamp AT TIME ZONE 'UTC' END END)"
        ).format(text),
        [key, key, _OFFSET, key, key],
    )


def _number(key: str) -> SqlScope:
    """The metadata value at `key` as a double (NULL unless it is a JSON number)."""
    return (
        sql.SQL(
            "(CASE WHEN jsonb_typeof(c.metadata -> %s) = 'number' "
            "THEN (c.metadata ->> %s)::float8 END)"
        ),
        [key, key],
    )


def _between(key: str, wanted: Range) -> SqlScope:
    """`wanted`'s bounds on the value at `key` (an instant or a number)."""
    value, value_params = _instant(key) if wanted.is_dates else _number(key)
    parts: list[sql.Composable] = []
    params: list[Any] = []
    for operator, bound in (
        (">=", wanted.gte),
        (">", wanted.gt),
        ("<=", wanted.lte),
        ("<", wanted.lt),
    ):
        if bound is not None:
            parts.append(sql.SQL("{} {} %s").format(value, sql.SQL(operator)))
            params += [*value_params, bound if isinstance(bound, datetime) else float(bound)]
    return sql.SQL("({})").format(sql.SQL(" AND ").join(parts)), params
