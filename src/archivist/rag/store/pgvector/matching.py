"""A search filter's `match` condition tree as SQL over the chunk table's JSONB `metadata`.

The same meaning as the Qdrant store's: a comparison tests the value at the key, or each item
when it is an array (`EXISTS` over its items); strings and bools compare as JSONB values (type
and value), numbers as `numeric` behind a `jsonb_typeof = 'number'` guard, so no stored value
makes the cast fail; ne / nin are `NOT` of eq / in, true where the key is absent. Every key and
value is a bound parameter.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from archivist.rag.store.pgvector.filter import SqlScope
from archivist.rag.store.search_filter import AllOf, AnyOf, Compare, Scalar

_OPERATORS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<=", "eq": "=", "in": "="}
_ITEMS = sql.SQL(
    "EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(c.metadata -> %s) = "
    "'array' THEN c.metadata -> %s ELSE jsonb_build_array(c.metadata -> %s) END) AS item(v) "
    "WHERE {})"
)
_NUMBER = sql.SQL("CASE WHEN jsonb_typeof(v) = 'number' THEN (v::text)::numeric END")


def match_sql(condition: Compare | AllOf | AnyOf) -> SqlScope:
    """(SQL condition on table alias `c`, its parameters) for `condition`; never NULL."""
    if isinstance(condition, AllOf | AnyOf):
        parts = [match_sql(part) for part in condition.parts]
        joiner = sql.SQL(" AND " if isinstance(condition, AllOf) else " OR ")
        return (
            sql.SQL("({})").format(joiner.join(part for part, _ in parts)),
            [param for _, params in parts for param in params],
        )
    operator = _OPERATORS.get(condition.op, "=")
    tests: list[sql.Composable] = []
    params: list[Any] = [condition.key] * 3
    for value in condition.values:
        if isinstance(value, int | float) and not isinstance(value, bool):
            tests.append(sql.SQL("{} {} %s::numeric").format(_NUMBER, sql.SQL(operator)))
            params.append(_decimal(value))
        else:
            tests.append(sql.SQL("v = %s"))
            params.append(Jsonb(value))
    items = _ITEMS.format(sql.SQL(" OR ").join(tests))
    if condition.op in ("ne", "nin"):
        return sql.SQL("(NOT {})").format(items), params
    return items, params


def _decimal(value: Scalar) -> Decimal:
    """`value` exactly as a numeric parameter (a float by its shortest repr)."""
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(int(value))
