"""Walking the paths given on the command line into the files to process."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path


def walk_files(paths: Sequence[str]) -> Iterator[Path]:
    """Every regular file named or under a named folder, sorted, hidden entries skipped."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                relative = child.relative_to(path).parts
                if child.is_file() and not any(p.startswith(".") for p in relative):
                    yield child
        elif path.is_file():
            yield path
        else:
            raise FileNotFoundError(f"{raw}: no such file or folder")
