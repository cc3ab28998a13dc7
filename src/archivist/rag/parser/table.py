"""Tables (rows of cell strings) rendered as Markdown or JSON text for any parser."""

from __future__ import annotations

import json


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
