"""`TokenChunker`: windows measured in the embedding model's own tokens, so none is truncated."""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import AsyncIterable, AsyncIterator
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from archivist.chunk_defaults import DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP
from archivist.errors import InvalidArgumentError
from archivist.message import TextBlock
from archivist.rag.chunker.base import ChunkerBase, chunk_of
from archivist.rag.chunker.settings import ChunkSettings
from archivist.rag.chunker.tables import Table, find_tables, table_at
from archivist.rag.cjk import CJK_CHARACTERS
from archivist.rag.document import Chunk, Section
from archivist.validation import check_non_negative_int, check_positive_int

# Preferred cut points, best first; a window ends after the last one in its second half.
_BREAKS = (
    "\n\n",
    "\n",
    ". ",
    "? ",
    "! ",
    "。",
    "！",
    "？",
    "; ",
    "；",
    ", ",
    "，",
    "、",
    " ",
    "\t",
)
_PROBE_CHARS_PER_TOKEN = 6
"""First guess of characters per token when cutting a probe of text to tokenize."""


@runtime_checkable
class TextTokenizer(Protocol):
    """What a chunker needs of a tokenizer: the character span of every token of a text."""

    @property
    def max_tokens(self) -> int:
        """The most tokens one input may hold (special tokens and prefixes already deducted)."""
        ...

    def spans(self, text: str) -> list[tuple[int, int]]:
        """`(start, end)` character offsets of each token of `text`, in order, no specials."""
        ...


_ESTIMATE = re.compile(rf"[{CJK_CHARACTERS}]|[^\s{CJK_CHARACTERS}\W]+|[^\w\s]", re.UNICODE)
_ESTIMATE_WORD_PIECE = 4
"""Characters per token assumed inside a long word."""


class EstimatedTokenizer:
    """A CJK-aware estimate for models whose tokenizer is unknown.

    Each CJK character and each punctuation mark counts as one token, and other words as one
    token per four characters (at least one), close to WordPiece/BPE vocabularies.
    """

    def __init__(self, max_tokens: int = 512) -> None:
        check_positive_int(max_tokens, "max_tokens")
        self._max_tokens = max_tokens

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def spans(self, text: str) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for match in _ESTIMATE.finditer(text):
            start, end = match.span()
            for piece in range(start, end, _ESTIMATE_WORD_PIECE):
                out.append((piece, min(end, piece + _ESTIMATE_WORD_PIECE)))
        return out


class TokenChunkerParameters(BaseModel):
    """What decides a TokenChunker's output (ingestion fingerprints it)."""

    model_config = ConfigDict(frozen=True)

    chunk_size: int
    overlap: int
    context_header: bool = False
    table_header: bool = True
    tokenizer: str


class TokenChunker(ChunkerBase):
    """Splits text Sections into windows of at most `chunk_size` tokens of `tokenizer`.

    With the embedding model's tokenizer (`model.chunk_tokenizer()`), every chunk fits the
    model's input, so nothing is cut off when it is embedded. Windows end at a paragraph,
    line, sentence or word break (Western or CJK punctuation) when one lies in their second
    half; consecutive windows of a Section share `overlap` tokens, starting at a word break.
    `chunk_size` defaults to the tokenizer's `max_tokens` and may not exceed it.

    With `context_header`, each chunk of a Section starts with a line naming where it sits —
    the document `title` and `heading_path` from the Section's metadata ("Guide > Install >
    Linux") — counted in the chunk's budget, so the passage keeps its context when it is
    embedded, matched by words and read by an agent.

    Markdown tables (rows starting with `|`, see `archivist.rag.chunker.tables`) are cut
    between rows, overlaps start at a row, and with `table_header` (the default) a chunk that
    starts inside a table's body begins with the table's header and delimiter rows, counted
    in its budget: every chunk of a table is a table with its column names.
    """

    def __init__(
        self,
        tokenizer: TextTokenizer | None = None,
        chunk_size: int | None = DEFAULT_CHUNK_SIZE,
        overlap: int = DEFAULT_OVERLAP,
        *,
        context_header: bool = False,
        table_header: bool = True,
    ) -> None:
        self.tokenizer: TextTokenizer = tokenizer or EstimatedTokenizer()
        limit = self.tokenizer.max_tokens
        size = limit if chunk_size is None else chunk_size
        check_positive_int(size, "chunk_size")
        if size > limit:
            raise InvalidArgumentError(
                f"chunk_size {size} exceeds the {limit} tokens the embedding model reads; "
                "longer chunks would be truncated",
                argument="chunk_size",
            )
        check_non_negative_int(overlap, "overlap")
        ChunkSettings.of(chunk_size=size, overlap=overlap)  # overlap < chunk_size
        self.chunk_size = size
        self.overlap = overlap
        self.context_header = bool(context_header)
        self.table_header = bool(table_header)
        self.parameters = TokenChunkerParameters(
            chunk_size=size,
            overlap=overlap,
            context_header=self.context_header,
            table_header=self.table_header,
            tokenizer=f"{type(self.tokenizer).__qualname__}:{limit}",
        )

    async def chunk(self, sections: list[Section]) -> list[Chunk]:
        chunks = [chunk async for chunk in self.chunk_stream(_stream(sections))]
        for chunk in chunks:
            chunk.total_chunks = len(chunks)
        return chunks

    async def chunk_stream(self, sections: AsyncIterable[Section]) -> AsyncIterator[Chunk]:
        """The chunks of a stream of Sections, cut as the text arrives: a run of `continued`
        Sections is cut as one text while holding only a window's worth of it beyond the
        block being read. Chunks come numbered, with `total_chunks` 0 (unknown until the end).
        """
        index = 0
        run: _Run | None = None
        async for section in sections:
            if run is not None and section.continued and isinstance(section.content, TextBlock):
                pieces = run.feed(section.content.text, final=False)
            else:
                pieces = run.feed("", final=True) if run is not None else []
                run = None
                if isinstance(section.content, TextBlock):
                    run = _Run(self, section)
                    pieces += run.feed(section.content.text, final=False)
                else:
                    pieces.append(chunk_of(section.content.model_copy(deep=True), section))
            for chunk in pieces:
                chunk.chunk_index = index
                index += 1
                yield chunk
        if run is not None:
            for chunk in run.feed("", final=True):
                chunk.chunk_index = index
                index += 1
                yield chunk

    def _budget(self, section: Section) -> tuple[str, int]:
        """The context header line of `section` ("" if none) and the tokens left for text."""
        header = self._header(section) if self.context_header else ""
        budget = self.chunk_size - (self.count(header) + 1 if header else 0)
        if budget < self.chunk_size // 2:  # a header that long would crowd out the text
            header, budget = "", self.chunk_size
        return header, budget

    @staticmethod
    def _header(section: Section) -> str:
        """The document title and heading path of `section`, as one line ("" if neither)."""
        meta = section.metadata
        parts = [str(meta["title"]).strip()] if isinstance(meta.get("title"), str) else []
        path = meta.get("heading_path")
        if isinstance(path, list):
            parts += [str(heading).strip() for heading in path]
        parts = [part for part in parts if part]
        # A first heading that repeats the title says nothing new.
        if len(parts) > 1 and parts[0].casefold() == parts[1].casefold():
            parts.pop(1)
        return " > ".join(" ".join(part.split()) for part in parts)

    def count(self, text: str) -> int:
        """How many tokens `text` is."""
        return len(self.tokenizer.spans(text))

    def split_text(self, text: str) -> list[str]:
        """The stripped, non-blank windows of `text`, in order (a window that starts inside
        a table's body led by the table's header rows)."""
        found, _, _ = self._scan(text, self.chunk_size, final=True, carried=None)
        return [
            f"{lead}\n{text[start:end]}" if lead else text[start:end] for start, end, lead in found
        ]

    def windows(self, text: str, budget: int | None = None) -> list[tuple[int, int]]:
        """`(start, end)` offsets in `text` of each window of at most `budget` tokens
        (default `chunk_size`, less a repeated table header), without surrounding whitespace."""
        found, _ = self.scan(text, self.chunk_size if budget is None else budget, final=True)
        return found

    def scan(self, text: str, budget: int, *, final: bool) -> tuple[list[tuple[int, int]], int]:
        """The windows of `text` and where the next would start. Unless `final`, `text` is
        a prefix of a longer text: scanning stops before a window whose cut could depend on
        what follows, so fed block by block it finds exactly the windows of the whole."""
        found, resume, _ = self._scan(text, budget, final=final, carried=None)
        return [(start, end) for start, end, _ in found], resume

    def _scan(
        self, text: str, budget: int, *, final: bool, carried: str | None
    ) -> tuple[list[tuple[int, int, str]], int, str | None]:
        """`scan` with tables: `(start, end, lead)` windows, where `lead` is the header rows to
        put above a window that starts in a table's body; where the next window would start;
        and the header of the table it would start in (`carried`: `text` itself starts in the
        body of a table with that header)."""
        found: list[tuple[int, int, str]] = []
        tables = find_tables(text, carried) if self.table_header else []
        costs: dict[str, int] = {}
        start, size = 0, len(text)
        while start < size:
            while start < size and text[start].isspace():
                start += 1
            if start >= size:
                break
            table = table_at(tables, start) if tables else None
            lead, room = "", budget
            if table is not None and start >= table.body:
                if table.header not in costs:
                    costs[table.header] = self.count(table.header) + 1
                if costs[table.header] <= budget // 2:  # else the header would crowd out rows
                    lead, room = table.header, budget - costs[table.header]
            spans, reached_end = self._probe(text, start, room)
            if reached_end and not final:
                inside = table is not None and start >= table.body
                return found, start, table.header if inside and table is not None else None
            cut = size if len(spans) <= room else self._cut(text, start, spans, room)
            if tables and cut < size:
                cut = _row_cut(tables, text, start, cut)
            end = cut
            while end > start and text[end - 1].isspace():
                end -= 1
            if end > start:
                found.append((start, end, lead))
            if cut >= size:
                break
            start = self._next_start(text, start, cut, spans, room, tables)
        return found, size, None

    def _probe(self, text: str, start: int, budget: int) -> tuple[list[tuple[int, int]], bool]:
        """Token spans (relative to `start`) of enough text to hold more than one window,
        and whether the probe had to run to the end of `text`."""
        length = budget * _PROBE_CHARS_PER_TOKEN
        while True:
            end = min(len(text), start + length)
            spans = self.tokenizer.spans(text[start:end])
            if len(spans) > budget and end < len(text):
                return spans, False
            if end >= len(text):
                return spans, True
            length *= 2

    def _cut(self, text: str, start: int, spans: list[tuple[int, int]], budget: int) -> int:
        """Where the window from `start` ends: a break in its second half, within budget."""
        hard = start + spans[budget][0]
        floor = start + spans[budget // 2][0]
        cut = _break_before(text, floor, hard)
        # A cut inside a word can tokenize differently on its own: back off until it fits.
        index = budget
        while self.count(text[start:cut]) > budget and index > 1:
            index -= 1
            cut = start + spans[index][0]
        return max(cut, start + spans[1][0])

    def _next_start(
        self,
        text: str,
        start: int,
        cut: int,
        spans: list[tuple[int, int]],
        budget: int,
        tables: list[Table],
    ) -> int:
        """Where the next window starts: `overlap` tokens before `cut`, at a word start (in
        a table: at the next row start, or at `cut` when no row starts in the overlap)."""
        overlap = min(self.overlap, budget // 2)
        if overlap == 0:
            return cut
        inside = bisect.bisect_left([s for s, _ in spans], cut - start)
        if inside <= overlap:
            return cut
        candidate = start + spans[inside - overlap][0]
        if candidate > 0 and not text[candidate - 1].isspace() and not _is_cjk(text[candidate]):
            space = text.find(" ", candidate, cut)
            if space != -1 and space + 1 < cut:
                candidate = space + 1
        if candidate <= start:
            return cut
        table = table_at(tables, candidate) if tables else None
        if table is None:
            return candidate
        if candidate < table.body:  # in the header rows: the next window has them anyway
            return table.start if table.start > start else cut
        row = table.next_row(text, candidate)
        return row if row < cut else cut


DEFAULT_ESTIMATED_SIZE = 256
"""Chunk size, in estimated tokens, for models whose tokenizer is not known locally."""


def chunker_for(
    tokenizer: TextTokenizer | None,
    chunk_size: int | None = DEFAULT_CHUNK_SIZE,
    overlap: int = DEFAULT_OVERLAP,
    *,
    context_header: bool = False,
) -> TokenChunker:
    """The chunker ingestion uses for a model: its own `tokenizer` when known (chunks fill its
    input unless `chunk_size` says less), else the CJK-aware estimate of `chunk_size` tokens."""
    if tokenizer is None:
        tokenizer = EstimatedTokenizer(chunk_size or DEFAULT_ESTIMATED_SIZE)
    return TokenChunker(tokenizer, chunk_size, overlap, context_header=context_header)


def _break_before(text: str, floor: int, end: int) -> int:
    for mark in _BREAKS:
        hit = text.rfind(mark, floor, end)
        if hit != -1:
            return hit + len(mark)
    return end


def _row_cut(tables: list[Table], text: str, start: int, cut: int) -> int:
    """`cut` moved back to the start of its table row (or before the table when it falls in
    the header rows), unless that leaves the window from `start` empty."""
    table = table_at(tables, cut)
    if table is None or cut == table.start:
        return cut
    if cut < table.body:
        return table.start if table.start > start else cut
    row = table.row_start(text, cut)
    return row if row > start else cut


def _is_cjk(char: str) -> bool:
    return unicodedata.east_asian_width(char) in {"W", "F"}


class _Run:
    """One text being cut as it arrives in blocks: the unconsumed tail and its Section."""

    def __init__(self, chunker: TokenChunker, section: Section) -> None:
        self.chunker = chunker
        self.section = section
        self.header, self.budget = chunker._budget(section)
        self.pending = ""
        self.carried: str | None = None  # the header of the table `pending` starts inside

    def feed(self, text: str, *, final: bool) -> list[Chunk]:
        """Chunks of the windows that `text` (appended to the tail) completes."""
        self.pending += text
        found, resume, carried = self.chunker._scan(
            self.pending, self.budget, final=final, carried=self.carried
        )
        chunks = []
        for start, end, lead in found:
            piece = self.pending[start:end]
            piece = f"{lead}\n{piece}" if lead else piece
            piece = f"{self.header}\n{piece}" if self.header else piece
            chunks.append(chunk_of(TextBlock(text=piece), self.section))
        self.pending = "" if final else self.pending[resume:]
        self.carried = None if final else carried
        return chunks


async def _stream(sections: list[Section]) -> AsyncIterator[Section]:
    for section in sections:
        yield section
