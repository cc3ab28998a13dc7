"""Plain output helpers: paths shown relative to the working directory, JSON for scripts."""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any


def display_path(path: str | Path) -> str:
    """`path` relative to the current directory when it lies under it, else as given."""
    candidate = Path(path)
    try:
        return str(candidate.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def print_json(payload: Any) -> None:
    """`payload` as one line of JSON on stdout (ids and paths in full, never wrapped)."""
    sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def print_rows(header: list[str], rows: list[list[str]]) -> None:
    """Left-aligned columns on stdout; the last column is never padded, cut or wrapped, so ids
    and paths copy and grep whole at any terminal width."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[-1]]).rstrip())


def display_width(text: str) -> int:
    """Terminal columns `text` takes: wide (CJK) characters count two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def wrap(text: str, width: int, indent: str = "", continuation: str | None = None) -> list[str]:
    """`text` (whitespace squeezed) in lines of at most `width` terminal columns, each starting
    with `indent` (lines after the first with `continuation`, if given); a word wider than a
    line (e.g. CJK text without spaces) is cut by character."""
    if continuation is not None and continuation != indent:
        first = wrap(text, width, indent)[:1]
        if not first:
            return []
        rest = " ".join(text.split())[len(" ".join(first[0].split())) :]
        return first + wrap(rest, width, continuation)
    room = max(1, width - display_width(indent))
    lines: list[str] = []
    current = ""
    for word in text.split():
        while display_width(word) > room:
            free = room - display_width(current) - (1 if current else 0)
            head = ""
            for char in word:
                if display_width(head + char) > free:
                    break
                head += char
            if not head and current:  # no room left on this line
                lines.append(current)
                current = ""
                continue
            head = head or word[0]  # a wide character on a one-column line
            lines.append(f"{current} {head}" if current else head)
            current = ""
            word = word[len(head) :]
        if not word:
            continue
        candidate = f"{current} {word}" if current else word
        if display_width(candidate) <= room:
            current = candidate
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return [indent + line for line in lines]


_LIST_ITEM = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s")


def text_lines(text: str, width: int, indent: str = "") -> list[str]:
    """`text` in lines of at most `width` columns, each starting with `indent`: prose is
    reflowed paragraph by paragraph, while Markdown table rows, list items and headings keep a
    line each (a long one wrapped, its continuation indented two more) and fenced code keeps
    its lines and their indentation (a long line cut)."""
    lines: list[str] = []
    paragraph: list[str] = []
    in_code = False

    def flush() -> None:
        if paragraph:
            lines.extend(wrap(" ".join(paragraph), width, indent))
            paragraph.clear()

    for raw in text.split("\n"):
        line = raw.strip()
        if line.startswith(("```", "~~~")) or in_code:
            flush()
            in_code = in_code != line.startswith(("```", "~~~"))
            lines.extend(cut(raw.rstrip().expandtabs(4), width, indent))
        elif not line:
            flush()
        elif line.startswith(("|", "#")) or _LIST_ITEM.match(line):
            flush()
            lines.extend(wrap(raw.rstrip(), width, indent, indent + "  "))
        else:
            paragraph.append(line)
    flush()
    return lines


def cut(line: str, width: int, indent: str = "") -> list[str]:
    """`line` as written (spaces kept) in pieces of at most `width` columns after `indent`."""
    room = max(1, width - display_width(indent))
    pieces: list[str] = []
    current = ""
    for char in line:
        if current and display_width(current + char) > room:
            pieces.append(indent + current)
            current = ""
        current += char
    pieces.append(indent + current)
    return pieces
