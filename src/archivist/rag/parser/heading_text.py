"""`HeadingTextParser`: the shared frame of parsers that cut a text format at its headings."""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from archivist.errors import InvalidArgumentError
from archivist.rag.document import Section
from archivist.rag.parser.base import ParserBase, sections_in_thread
from archivist.rag.parser.text import read_text


class HeadingTextParser(ParserBase):
    """Decodes the file, cuts it into one Section per heading in a worker thread (the cut is
    CPU-bound), and refuses a file that yields no text. Headings deeper than
    `max_heading_level` stay inside their parent's Section."""

    empty_message: ClassVar[str] = "the file holds no text besides headings"

    def __init__(self, max_heading_level: int = 6, encoding: str = "utf-8") -> None:
        if not 1 <= max_heading_level <= 6:
            raise InvalidArgumentError(
                f"max_heading_level must be 1–6, not {max_heading_level!r}",
                argument="max_heading_level",
            )
        "".encode(encoding)  # unknown codec → LookupError now
        self.max_heading_level = max_heading_level
        self.encoding = encoding

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        text = self.read(file, filename)
        return await sections_in_thread(
            lambda: self.parse_text(text, filename), filename, self.empty_message
        )

    def read(self, file: bytes | str, filename: str) -> str:
        """The file's text, decoded like `TextParser` does (BOM, `encoding`, detection)."""
        return read_text(file, filename, self.encoding)

    @abstractmethod
    def parse_text(self, text: str, filename: str) -> list[Section]:
        """Sections of the decoded `text` (synchronous)."""
