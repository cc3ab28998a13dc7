"""Chunkers: Sections in, Chunks out."""

from archivist.rag.chunker.approx_token import ApproxTokenChunker, approx_tokens
from archivist.rag.chunker.base import ChunkerBase
from archivist.rag.chunker.settings import ChunkSettings
from archivist.rag.chunker.token import (
    EstimatedTokenizer,
    TextTokenizer,
    TokenChunker,
    chunker_for,
)

__all__ = [
    "ApproxTokenChunker",
    "ChunkSettings",
    "ChunkerBase",
    "EstimatedTokenizer",
    "TextTokenizer",
    "TokenChunker",
    "approx_tokens",
    "chunker_for",
]
