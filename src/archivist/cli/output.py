"""Plain output helpers: paths shown relative to the working directory, JSON for scripts."""

from __future__ import annotations

import json
import os
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any


def display_path(path: str | Path) -> str:
    """`path` relative to the current directory when it lies under it, else as given; a
    symbolic link is shown as the link (a dangling one too), not as where it points."""
    try:
        here = Path.cwd().resolve()
        for candidate in (Path(os.path.abspath(path)), Path(path).resolve()):
            if candidate.is_relative_to(here):
                return str(candidate.relative_to(here))
    except OSError:
        pass
    return str(path)


def count(n: int, noun: str) -> str:
    """`1 file`, `2 files`, `1,024 chunks`."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


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
    rows = text.split("\n")
    fences = _fences(rows)

    def flush() -> None:
        if paragraph:
            lines.extend(wrap(" ".join(paragraph), width, indent))
            paragraph.clear()

    for number, raw in enumerate(rows):
        line = raw.strip()
        if number in fences or in_code:
            flush()
            in_code = in_code != (number in fences)
            lines.extend(cut(raw.rstrip().expandtabs(4), width, indent))
        elif not line:
            flush()
        elif line.startswith(("|", "#")) or _LIST_ITEM.match(line):
            flush()
            wrapped = wrap(raw.rstrip(), width, indent, indent + "  ")
            if len(wrapped) > 1 and wrapped[-1].strip() == "|":  # a row's closing bar alone
                wrapped.pop()
            lines.extend(wrapped)
        else:
            paragraph.append(line)
    flush()
    return lines


_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


def _fences(rows: list[str]) -> set[int]:
    """Line numbers of code fences: pairs of ``` or ~~~ lines (the closing one at least as
    long); an unclosed ``` fence (a chunk cut inside code) opens code to the end, while an
    unclosed ~~~ line is taken for what it more often is in a passage, an RST underline."""
    found: set[int] = set()
    opening: tuple[int, str] | None = None
    for number, row in enumerate(rows):
        match = _FENCE.match(row)
        if match is None:
            continue
        mark = match.group(1)
        if opening is None or (opening[1][0] == "~" and mark[0] == "`"):
            opening = (number, mark)
        elif (
            mark[0] == opening[1][0]
            and len(mark) >= len(opening[1])
            and not row.strip(mark[0] + " \t")
        ):
            found |= {opening[0], number}
            opening = None
    if opening is not None and opening[1][0] == "`":
        found.add(opening[0])
    return found


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
