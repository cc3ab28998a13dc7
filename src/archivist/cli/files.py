"""Walking the paths given on the command line into the files to process, noting every path
that is left out and why (hidden entries aside)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from archivist.errors import InvalidArgumentError


@dataclass(frozen=True)
class SkippedPath:
    """A path the walk did not enter or take, with the reason."""

    path: str
    reason: str


@dataclass
class Walk:
    """The regular files found, in order, the paths skipped on the way, and how many hidden
    entries (names starting with '.') inside the folders were left out."""

    files: list[Path] = field(default_factory=list)
    skipped: list[SkippedPath] = field(default_factory=list)
    hidden: int = 0


def walk_files(paths: Sequence[str]) -> Walk:
    """Every regular file named or under a named folder (following symbolic links to folders
    once each), sorted, hidden entries left out; a named path that does not exist is an
    InvalidArgumentError (a bad command line)."""
    walk = Walk()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            _walk_dir(path, walk, {os.path.realpath(path)}, set())
        elif path.is_file():
            walk.files.append(path)
        elif path.is_symlink():
            raise InvalidArgumentError(f"{raw}: dangling symbolic link", argument="PATH")
        elif path.exists():
            raise InvalidArgumentError(f"{raw}: not a regular file or folder", argument="PATH")
        else:
            raise InvalidArgumentError(f"{raw}: no such file or folder", argument="PATH")
    return walk


def _walk_dir(directory: Path, walk: Walk, ancestors: set[str], seen: set[str]) -> None:
    real_dir = os.path.realpath(directory)
    if real_dir in seen:
        walk.skipped.append(SkippedPath(str(directory), "folder already walked by another path"))
        return
    seen.add(real_dir)
    try:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError as exc:
        walk.skipped.append(
            SkippedPath(str(directory), f"unreadable folder ({exc.strerror or exc})")
        )
        return
    for entry in entries:
        if entry.name.startswith("."):
            walk.hidden += 1
            continue
        path = Path(entry.path)
        if entry.is_symlink() and not path.exists():
            walk.skipped.append(SkippedPath(str(path), "dangling symbolic link"))
        elif path.is_dir():
            real = os.path.realpath(path)
            if real in ancestors:
                walk.skipped.append(SkippedPath(str(path), "symbolic link loop"))
            else:
                _walk_dir(path, walk, ancestors | {real}, seen)
        elif path.is_file():
            walk.files.append(path)
        else:
            walk.skipped.append(SkippedPath(str(path), "not a regular file"))
