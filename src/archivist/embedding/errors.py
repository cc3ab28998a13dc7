"""Exceptions raised by embedding models (defined in `archivist.errors`)."""

from __future__ import annotations

from archivist.errors import (
    EmbeddingAPIError,
    EmbeddingError,
    InvalidVectorError,
    TransientEmbeddingError,
)

__all__ = ["EmbeddingAPIError", "EmbeddingError", "InvalidVectorError", "TransientEmbeddingError"]
