"""Chunkers: Sections in, Chunks out."""

from archivist.rag.chunker.approx_token import ApproxTokenChunker, approx_tokens
from archivist.rag.chunker.base import ChunkerBase

__all__ = ["ApproxTokenChunker", "ChunkerBase", "approx_tokens"]
