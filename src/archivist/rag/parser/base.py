"""`ParserBase`: turns a file into Sections along its natural boundaries."""

from __future__ import annotations

import asyncio
import mimetypes
import os
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable
from typing import ClassVar

from archivist.errors import DocumentParseError
from archivist.rag.document import Section

# Our own table for the built-in types: the stdlib `mimetypes` table varies by system.
_KNOWN_EXTENSIONS: dict[str, list[str]] = {
    "text/markdown": [".md", ".markdown"],
    "text/x-rst": [".rst"],
    "application/x-yaml": [".yaml", ".yml"],
    "application/json": [".json"],
    "application/xml": [".xml"],
    "text/csv": [".csv"],
    "text/html": [".html", ".htm"],
    "text/plain": [".txt", ".text", ".log"],
    "application/pdf": [".pdf"],
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": [".pptx"],
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": [".docx"],
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": [".xlsx", ".xlsm"],
    "image/png": [".png"],
    "image/jpeg": [".jpg", ".jpeg"],
    "image/gif": [".gif"],
    "image/bmp": [".bmp"],
    "image/webp": [".webp"],
}


def extensions_for(media_type: str) -> list[str]:
    """Known file extensions (with dot, lower case) for an IANA media type."""
    if media_type in _KNOWN_EXTENSIONS:
        return list(_KNOWN_EXTENSIONS[media_type])
    return sorted({e.lower() for e in mimetypes.guess_all_extensions(media_type, strict=False)})


class ParserBase(ABC):
    """Base class of all parsers.

    `supported_media_types` declares what a parser reads (IANA media types);
    `parse(file, filename)` returns the file's Sections, raising FileNotFoundError for a
    missing path and ValueError (naming the file) for content it cannot read.
    """

    supported_media_types: ClassVar[list[str]] = []

    @classmethod
    def supported_extensions(cls) -> list[str]:
        """File extensions (".pdf", ...) derived from `supported_media_types`."""
        out: list[str] = []
        for media_type in cls.supported_media_types:
            out.extend(e for e in extensions_for(media_type) if e not in out)
        return out

    @abstractmethod
    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        """Parse `file` (raw bytes, or a path for binary parsers) named `filename`."""

    async def stream_sections(self, file: bytes | str, filename: str) -> AsyncIterator[Section]:
        """The Sections of `file` as they are read, for files too large to hold parsed.

        Chunking the stream gives the chunks of `parse`'s list. This default yields `parse`'s
        list; parsers that can read incrementally (text in blocks, PDF page by page) override
        it and may split a long text into `continued` Sections.
        """
        for section in await self.parse(file, filename):
            yield section


class BinaryParser(ParserBase):
    """A parser of a binary format: the file is read whole, then `iter_sections` reads it in a
    worker thread so the event loop stays free; a file that parses to nothing is unreadable,
    and the DocumentParseError says `nothing_found`."""

    nothing_found: ClassVar[str] = "the file holds nothing to index"

    @abstractmethod
    def iter_sections(self, data: bytes, filename: str) -> Iterable[Section]:
        """The Sections of file `data` named `filename` (synchronous)."""

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        data = read_binary(file, filename)
        return await sections_in_thread(
            lambda: self.iter_sections(data, filename), filename, self.nothing_found
        )


def read_binary(file: bytes | str | os.PathLike[str], filename: str) -> bytes:
    """Raw bytes of `file`: bytes as given, a str/PathLike read from disk; empty → ValueError."""
    if isinstance(file, bytes | bytearray | memoryview):
        data = bytes(file)
    elif isinstance(file, str | os.PathLike):
        path = os.fspath(file)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{filename}: no such file: {path!r}")
        with open(path, "rb") as fh:
            data = fh.read()
    else:
        raise TypeError(f"{filename}: file must be bytes or a path, not {type(file).__name__}")
    if not data:
        raise DocumentParseError("the file is empty", filename=filename)
    return data


async def sections_in_thread(
    parse: Callable[[], Iterable[Section]], filename: str, empty: str
) -> list[Section]:
    """`parse()`'s Sections, read in a worker thread so the event loop stays free; none at all
    is a DocumentParseError saying `empty`, as a file that parses to nothing is unreadable."""
    sections = await asyncio.to_thread(lambda: list(parse()))
    if not sections:
        raise DocumentParseError(empty, filename=filename)
    return sections
