"""`TextParser`: a whole text file as one Section; the chunker splits it."""

from __future__ import annotations

import codecs
import os
from collections.abc import AsyncIterator
from typing import ClassVar

from archivist.errors import DocumentParseError
from archivist.message import TextBlock
from archivist.rag.document import Section
from archivist.rag.parser.base import ParserBase, read_binary
from archivist.rag.parser.encoding import decode_text, stream_encoding

STREAM_FROM = 8 * 1024 * 1024
"""Files from this size on are streamed in blocks by `TextParser.stream_sections`."""
STREAM_BLOCK = 1024 * 1024
"""Bytes read per block when streaming."""


def is_existing_file(candidate: str) -> bool:
    try:
        return os.path.isfile(candidate)
    except (ValueError, OSError):  # NUL bytes or over-long names: text, not a path
        return False


def _check_encodable(text: str, filename: str) -> None:
    """A `str` given as text must be valid Unicode: lone surrogates cannot be stored."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DocumentParseError(
            f"the text holds an invalid character (lone surrogate) at index {exc.start}",
            filename=filename,
        ) from exc


class TextParser(ParserBase):
    """Plain-text formats (text, Markdown, CSV, HTML, reST, JSON, XML, YAML).

    `bytes` (and a `str` naming an existing file, read from disk) are decoded by their
    byte-order mark if they have one, else as `encoding`, else, with `detect_encoding`, in
    the encoding a detector finds; any other `str` is the text itself.
    """

    supported_media_types: ClassVar[list[str]] = [
        "text/plain",
        "text/markdown",
        "text/csv",
        "text/html",
        "text/x-rst",
        "application/json",
        "application/xml",
        "application/x-yaml",
    ]

    def __init__(self, encoding: str = "utf-8", detect_encoding: bool = True) -> None:
        "".encode(encoding)  # unknown codec → LookupError now, not at parse time
        self.encoding = encoding
        self.detect_encoding = detect_encoding

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        text = read_text(file, filename, self.encoding, self.detect_encoding)
        return [Section(content=TextBlock(text=text), source=filename, metadata={})]

    async def stream_sections(self, file: bytes | str, filename: str) -> AsyncIterator[Section]:
        """A file of at least `STREAM_FROM` bytes as `continued` Sections of about
        `STREAM_BLOCK` bytes each, decoded incrementally; anything else as `parse` does."""
        if not (isinstance(file, str) and is_existing_file(file)) or (
            os.path.getsize(file) < STREAM_FROM
        ):
            for section in await self.parse(file, filename):
                yield section
            return
        with open(file, "rb") as fh:
            head = fh.read(STREAM_BLOCK)
            encoding, skip = stream_encoding(head, filename, self.encoding, self.detect_encoding)
            decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
            block, offset, seen_text, first = head[skip:], skip, False, True
            while True:
                final = not block
                try:
                    text = decoder.decode(block, final=final)
                except UnicodeDecodeError as exc:
                    raise DocumentParseError(
                        f"not valid {encoding} near byte {offset + exc.start}",
                        filename=filename,
                    ) from exc
                if "\x00" in text:
                    raise DocumentParseError(
                        "the text holds NUL bytes (a binary file?)", filename=filename
                    )
                if first and text.startswith("\ufeff"):
                    text = text[1:]
                seen_text = seen_text or bool(text.strip())
                if text:
                    yield Section(
                        content=TextBlock(text=text),
                        source=filename,
                        metadata={},
                        continued=not first,
                    )
                    first = False
                if final:
                    break
                offset += len(block)
                block = fh.read(STREAM_BLOCK)
        if not seen_text:
            raise DocumentParseError("the file holds no text", filename=filename)


def read_text(
    file: bytes | str, filename: str, encoding: str = "utf-8", detect: bool = True
) -> str:
    """The text of `file`: bytes or an existing path decoded (see `decode_text`), any other
    `str` as given; a leading BOM dropped. Blank text or NUL characters → ValueError."""
    if isinstance(file, str) and not is_existing_file(file):
        text = file
        _check_encodable(text, filename)
    else:
        text = decode_text(read_binary(file, filename), filename, encoding, detect)
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise DocumentParseError("the file holds no text", filename=filename)
    if "\x00" in text:
        raise DocumentParseError("the text holds NUL bytes (a binary file?)", filename=filename)
    return text
