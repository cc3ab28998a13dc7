"""Tables (rows of cell strings) rendered as Markdown or JSON text for any parser."""

from __future__ import annotations

import json
from typing import Literal, TypeAlias

from archivist.errors import InvalidArgumentError

TableFormat: TypeAlias = Literal["markdown", "json"]
"""How a parser renders tables: `table_to_markdown` or `table_to_json`."""


def check_table_format(table_format: TableFormat) -> None:
    """Reject a `table_format` other than "markdown" or "json" (the office parsers' option),
    which a caller without a type checker may pass."""
    if table_format not in ("markdown", "json"):
        raise InvalidArgumentError(
            f"table_format must be 'markdown' or 'json', not {table_format!r}",
            argument="table_format",
        )


def render_table(rows: list[list[str]], table_format: TableFormat) -> str:
    """`rows` as `table_format` says: a Markdown table or a JSON array of row objects."""
    return table_to_markdown(rows) if table_format == "markdown" else table_to_json(rows)


def table_to_markdown(rows: list[list[str]]) -> str:
    """A GitHub-style Markdown table; `|` and line breaks inside cells are escaped."""

    def cell(text: str) -> str:
        return (
            text.replace("\\", "\\\\")
            .replace("|", "\\|")
            .replace("\r\n", "<br>")
            .replace("\n", "<br>")
            .replace("\r", "<br>")
            .replace("\v", "<br>")
        )

    width = max(len(r) for r in rows)
    padded = [[cell(c) for c in r] + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(r) + " |" for r in padded[1:]]
    return "\n".join(lines)


def table_to_json(rows: list[list[str]]) -> str:
    """A JSON array with one object per body row, keyed by the header row's cells.

    A table of one row has no body: that row is the data, keyed `column_1`, `column_2`, ...
    """
    if len(rows) == 1:
        width = len(rows[0])
        rows = [[f"column_{i + 1}" for i in range(width)], rows[0]]
    keys: list[str] = []
    for i, name in enumerate(rows[0]):
        key = name.strip() or f"column_{i + 1}"
        base, n = key, 2
        while key in keys:
            key, n = f"{base}_{n}", n + 1
        keys.append(key)
    body = rows[1:]
    objects = [{k: (r[i] if i < len(r) else "") for i, k in enumerate(keys)} for r in body]
    return json.dumps(objects, ensure_ascii=False)
