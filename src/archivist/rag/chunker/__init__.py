"""Chunkers: Sections in, Chunks out.

Each name is imported on first use, so reading a knowledge base's chunk settings loads no
chunker.
"""

from typing import TYPE_CHECKING

from archivist._util.lazy import lazy_submodule_exports

if TYPE_CHECKING:
    from archivist.rag.chunker.approx_token import ApproxTokenChunker, approx_tokens
    from archivist.rag.chunker.base import ChunkerBase
    from archivist.rag.chunker.settings import ChunkSettings
    from archivist.rag.chunker.token import (
        EstimatedTokenizer,
        TextTokenizer,
        TokenChunker,
        chunker_for,
    )

_MODULES = {
    "approx_token": ["ApproxTokenChunker", "approx_tokens"],
    "base": ["ChunkerBase"],
    "settings": ["ChunkSettings"],
    "token": ["EstimatedTokenizer", "TextTokenizer", "TokenChunker", "chunker_for"],
}
__getattr__, __dir__ = lazy_submodule_exports(__name__, _MODULES)

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
