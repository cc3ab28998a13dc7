"""`ChunkerBase`: cuts Sections into the Chunks that get embedded and stored."""

from __future__ import annotations

from abc import ABC, abstractmethod

from archivist.rag.document import Chunk, Section


class ChunkerBase(ABC):
    """Base class of all chunkers.

    Rules every chunker keeps: no chunk crosses a Section; DataBlock Sections pass through
    whole; `chunk_index` runs 0..N-1 over the output and every chunk has `total_chunks = N`.
    """

    @abstractmethod
    async def chunk(self, sections: list[Section]) -> list[Chunk]:
        """Cut `sections` into chunks."""
