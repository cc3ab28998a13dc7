"""The chunking defaults as plain values: `ChunkSettings` (`archivist.rag.chunker.settings`) and
the service's settings are built on them, and the CLI shows them in `--help` without loading
pydantic or the chunkers."""

from __future__ import annotations

DEFAULT_CHUNK_SIZE: int | None = None
"""Tokens per chunk; None: as many as the embedding model reads in one input."""
DEFAULT_OVERLAP = 32
"""Tokens neighbouring chunks of one Section share."""

PARSE_MEMORY_MB = 512
"""A service's default memory limit on parsing and chunking one upload, in MiB."""
PARSE_CPU_SECONDS = 120
"""A service's default CPU-time limit on parsing and chunking one upload."""
PARSE_WALL_SECONDS = 600.0
"""A service's default limit on the time spent waiting for one upload's chunks."""
