"""`ApproxTokenChunker`: windows of an approximate token budget, no tokenizer needed."""

from __future__ import annotations

from pydantic import Field

from archivist.message import TextBlock
from archivist.rag.chunker.base import ChunkerBase, chunk_of
from archivist.rag.chunker.settings import ChunkSettings
from archivist.rag.document import Chunk, Section

BYTES_PER_TOKEN = 4
# Preferred cut points, best first; a window ends after the last one in its second half.
_BREAKS = (b"\n\n", b"\n", b". ", b"? ", b"! ", b"\xe3\x80\x82", b"; ", b", ", b" ", b"\t")


def approx_tokens(text: str) -> int:
    """Token estimate of `text`: UTF-8 bytes // 4."""
    return len(text.encode("utf-8")) // BYTES_PER_TOKEN


def _char_start(data: bytes, pos: int) -> int:
    """The nearest UTF-8 character start at or before `pos`."""
    while 0 < pos < len(data) and data[pos] & 0xC0 == 0x80:
        pos -= 1
    return pos


class ApproxTokenChunker(ChunkerBase):
    """Splits text Sections into windows of at most `chunk_size` approximate tokens.

    A token is estimated as `len(text.encode("utf-8")) // 4`. Windows end at a paragraph,
    line, sentence or word break when one lies in their second half, never inside a UTF-8
    character; consecutive windows of one Section share about `overlap` tokens. The work is
    linear in the text's length.
    """

    class Parameters(ChunkSettings):
        """Chunk size and overlap in approximate tokens, with `ChunkSettings`' rule; the
        defaults are AgentScope's, so code written for its chunker cuts the same windows."""

        chunk_size: int = Field(default=512, gt=0, description="approximate tokens per chunk")
        overlap: int = Field(
            default=50, ge=0, description="approximate tokens shared by neighbouring chunks"
        )

    def __init__(
        self,
        chunk_size: int | Parameters | None = None,
        overlap: int | None = None,
        parameters: Parameters | None = None,
    ) -> None:
        if isinstance(chunk_size, self.Parameters):  # AgentScope's `ApproxTokenChunker(params)`
            if parameters is not None:
                raise ValueError("pass parameters once")
            chunk_size, parameters = None, chunk_size
        if parameters is not None and (chunk_size is not None or overlap is not None):
            raise ValueError("pass either chunk_size/overlap or parameters, not both")
        if parameters is None:
            parameters = self.Parameters.of(chunk_size=chunk_size, overlap=overlap)
        self.parameters = parameters

    async def chunk(self, sections: list[Section]) -> list[Chunk]:
        chunks: list[Chunk] = []
        for section in sections:
            if isinstance(section.content, TextBlock):
                try:
                    pieces = self.split_text(section.content.text)
                except UnicodeEncodeError as exc:
                    raise ValueError(
                        f"{section.source}: the text holds an invalid character "
                        f"(lone surrogate) at index {exc.start}"
                    ) from exc
                for piece in pieces:
                    chunks.append(chunk_of(TextBlock(text=piece), section))
            else:
                chunks.append(chunk_of(section.content.model_copy(deep=True), section))
        for index, chunk in enumerate(chunks):
            chunk.chunk_index = index
            chunk.total_chunks = len(chunks)
        return chunks

    def split_text(self, text: str) -> list[str]:
        """The stripped, non-blank windows of `text`, in order."""
        data = text.encode("utf-8")
        budget = self.parameters.chunk_size * BYTES_PER_TOKEN
        overlap = self.parameters.overlap * BYTES_PER_TOKEN
        pieces: list[str] = []
        start, size = 0, len(data)
        while start < size:
            end = min(start + budget, size)
            if end < size:
                end = self._break_before(data, start, end)
            piece = data[start:end].decode("utf-8").strip()
            if piece:
                pieces.append(piece)
            if end >= size:
                break
            start = self._next_start(data, start, end, overlap)
        return pieces

    @staticmethod
    def _break_before(data: bytes, start: int, end: int) -> int:
        floor = start + (end - start) // 2
        for mark in _BREAKS:
            hit = data.rfind(mark, floor, end)
            if hit != -1:
                return hit + len(mark)
        return _char_start(data, end)

    @staticmethod
    def _next_start(data: bytes, start: int, end: int, overlap: int) -> int:
        if overlap == 0:
            return end
        candidate = _char_start(data, max(end - overlap, start + 1))
        if candidate <= start:
            return end
        # Begin the overlap at a word boundary when one is close by.
        space = data.find(b" ", candidate, end)
        if space != -1 and space + 1 < end:
            return space + 1
        return candidate
