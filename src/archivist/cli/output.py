"""Plain output helpers: paths shown relative to the working directory, JSON for scripts."""

from __future__ import annotations

import json
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


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """`text` (whitespace squeezed) in lines of at most `width` terminal columns, each starting
    with `indent`; a word wider than a line (e.g. CJK text without spaces) is cut by character."""
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
