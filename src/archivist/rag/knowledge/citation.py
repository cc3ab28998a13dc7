"""Where a chunk comes from, said the same way to a model, a person at the CLI and an API client."""

from __future__ import annotations

from archivist.rag.document import Chunk


def location(chunk: Chunk) -> str:
    """The chunk's place inside its file: page / slide / sheet and heading path when known,
    e.g. "page 4" or "Install > Linux" ("" when the file says nothing)."""
    meta = chunk.metadata
    parts = [f"{key} {meta[key]}" for key in ("page", "slide", "sheet") if key in meta]
    path = meta.get("heading_path")
    if isinstance(path, list) and path:
        parts.append(" > ".join(str(heading) for heading in path))
    return ", ".join(parts)


def citation(chunk: Chunk, source: str | None = None) -> str:
    """A label to cite: file (`source`, default the chunk's), location, chunk index, e.g.
    "guide.md, Install > Linux, chunk 3" or "deck.pptx, slide 4, chunk 7"."""
    parts = [source or chunk.source or "unknown source", location(chunk)]
    parts.append(f"chunk {chunk.chunk_index}")
    return ", ".join(part for part in parts if part)
