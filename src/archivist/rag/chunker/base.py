"""`ChunkerBase`: cuts Sections into the Chunks that get embedded and stored."""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import AsyncIterable, AsyncIterator
from typing import TYPE_CHECKING

from archivist.message import DataBlock, TextBlock
from archivist.rag.document import Chunk, Section

if TYPE_CHECKING:
    from archivist.rag.parser.base import ParserBase


class ChunkerBase(ABC):
    """Base class of all chunkers.

    Rules every chunker keeps: no chunk crosses a Section; DataBlock Sections pass through
    whole; `chunk_index` runs 0..N-1 over the output and every chunk has `total_chunks = N`.
    """

    @abstractmethod
    async def chunk(self, sections: list[Section]) -> list[Chunk]:
        """Cut `sections` into chunks."""

    async def chunk_stream(self, sections: AsyncIterable[Section]) -> AsyncIterator[Chunk]:
        """Cut a stream of Sections into the chunks `chunk` makes, in order, with
        `chunk_index` set and `total_chunks` left 0 (the count is known only at the end).

        This default collects the Sections (joining `continued` runs into one) and calls
        `chunk`; chunkers that can cut as they read override it to hold little at a time.
        """
        collected: list[Section] = []
        async for section in sections:
            previous = collected[-1] if collected else None
            if (
                section.continued
                and previous is not None
                and isinstance(previous.content, TextBlock)
                and isinstance(section.content, TextBlock)
            ):
                text = previous.content.text + section.content.text
                collected[-1] = previous.model_copy(update={"content": TextBlock(text=text)})
            else:
                collected.append(section.model_copy(update={"continued": False}))
        for chunk in await self.chunk(collected):
            chunk.total_chunks = 0
            yield chunk

    def chunk_file(self, parser: ParserBase, path: str, name: str) -> AsyncIterator[Chunk]:
        """The `chunk_stream` of `parser`'s Sections of the file at `path` (named `name`):
        what indexing a file runs. Wrappers override it to run the parsing elsewhere."""
        return self.chunk_stream(parser.stream_sections(path, name))


def chunk_of(content: TextBlock | DataBlock, section: Section) -> Chunk:
    """A chunk holding `content` cut from `section`: its source and a copy of its metadata;
    `chunk_index` and `total_chunks` are set once the whole output is known."""
    return Chunk(
        content=content,
        source=section.source,
        chunk_index=0,
        total_chunks=0,
        metadata=copy.deepcopy(section.metadata),
    )
