"""Markdown tables inside a text, so a chunker can cut them between rows and repeat their header.

A table is a header row, a delimiter row (`| --- | :-: |`) and the body rows that follow, each a
line starting with `|` (leading spaces allowed): what the parsers write for HTML, DOCX, PPTX and
XLSX tables and what most Markdown files use. Tables written without a leading `|` are plain text
here.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_ROW = re.compile(r"[ \t]*\|")
_DELIMITER = re.compile(r"[ \t]*\|(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*:?-*:?[ \t]*\r?$")


@dataclass(frozen=True)
class Table:
    """Where one table lies in a text (character offsets)."""

    start: int
    """The header row's first character (0 for a table carried over from earlier text)."""
    body: int
    """The first body row's first character (`end` when the table has no body)."""
    end: int
    """Just after the last row (before its line break)."""
    header: str
    """The header and delimiter rows, to repeat above rows that are cut from them."""

    def row_start(self, text: str, position: int) -> int:
        """The start of the row holding `position` (which lies in this table)."""
        return max(text.rfind("\n", self.start, position) + 1, self.start)

    def next_row(self, text: str, position: int) -> int:
        """The start of the first row at or after `position`, or `end` if none."""
        if position <= self.start:
            return self.start
        if text[position - 1] == "\n":
            return position
        found = text.find("\n", position, self.end)
        return self.end if found == -1 else found + 1


def find_tables(text: str, carried: str | None = None) -> list[Table]:
    """The tables of `text` in order. With `carried` (a table's header and delimiter rows),
    `text` starts inside that table's body: its leading rows are a table with that header."""
    if "|" not in text:
        return []
    tables: list[Table] = []
    lines = text.split("\n")
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)

    def rows_from(index: int) -> int:
        while index < len(lines) and _ROW.match(lines[index]):
            index += 1
        return index

    i = 0
    if carried is not None:
        stop = rows_from(0)
        if stop > 0:
            tables.append(Table(0, 0, offsets[stop - 1] + len(lines[stop - 1]), carried))
            i = stop
    while i < len(lines) - 1:
        if _ROW.match(lines[i]) and _DELIMITER.match(lines[i + 1]):
            stop = rows_from(i + 2)
            end = offsets[stop - 1] + len(lines[stop - 1])
            body = offsets[i + 2] if stop > i + 2 else end
            header = f"{lines[i].strip()}\n{lines[i + 1].strip()}"
            tables.append(Table(offsets[i], body, end, header))
            i = stop
        else:
            i += 1
    return tables


def table_at(tables: list[Table], position: int) -> Table | None:
    """The table whose rows hold `position` (from its header row to its end), or None."""
    index = bisect.bisect_right(tables, position, key=lambda table: table.start) - 1
    if index >= 0 and position < tables[index].end:
        return tables[index]
    return None
