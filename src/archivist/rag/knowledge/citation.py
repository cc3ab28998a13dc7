"""Where a chunk comes from, said the same way to a model, a person at the CLI and an API client."""

from __future__ import annotations

from typing import Any

from archivist.rag.document import Chunk
from archivist.rag.record import DuplicateSource


def location(chunk: Chunk) -> str:
    """The chunk's place inside its file: page / slide / sheet and heading path when known,
    e.g. "page 4" or "Install > Linux" ("" when the file says nothing)."""
    return _location(chunk.metadata)


def citation(chunk: Chunk, source: str | None = None) -> str:
    """A label to cite: file (`source`, default the chunk's), location, chunk index, e.g.
    "guide.md, Install > Linux, chunk 3" or "deck.pptx, slide 4, chunk 7"."""
    return _label(source or chunk.source, chunk.metadata, chunk.chunk_index)


def copy_citation(copy: DuplicateSource, source: str | None = None) -> str:
    """`citation` of another place holding a hit's text (one of its `also_in`)."""
    return _label(source or copy.source, copy.metadata, copy.chunk_index)


def _location(meta: dict[str, Any]) -> str:
    parts = [f"{key} {meta[key]}" for key in ("page", "slide", "sheet") if key in meta]
    path = meta.get("heading_path")
    if isinstance(path, list) and path:
        parts.append(" > ".join(str(heading) for heading in path))
    return ", ".join(parts)


def _label(source: str, meta: dict[str, Any], chunk_index: int) -> str:
    parts = [source or "unknown source", _location(meta), f"chunk {chunk_index}"]
    return ", ".join(part for part in parts if part)
