"""Plain output helpers: paths shown relative to the working directory, JSON for scripts."""

from __future__ import annotations

import json
import sys
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
