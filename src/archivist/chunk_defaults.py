"""The chunking defaults as plain values: `ChunkSettings` (`archivist.rag.chunker.settings`) is
built on them, and the CLI shows them in `--help` without loading pydantic or the chunkers."""

from __future__ import annotations

DEFAULT_CHUNK_SIZE: int | None = None
"""Tokens per chunk; None: as many as the embedding model reads in one input."""
DEFAULT_OVERLAP = 32
"""Tokens neighbouring chunks of one Section share."""
