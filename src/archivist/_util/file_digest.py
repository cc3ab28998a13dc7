"""The sha256 of a file, read in blocks: what decides that a file is unchanged (ingestion) or
is the file it claims to be (a model's checked files)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    """The hex sha256 of the bytes of `path`, read without holding the file whole."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
