"""`RSTParser`: a reStructuredText file cut at its section titles."""

from __future__ import annotations

import asyncio
import re
from typing import ClassVar

from archivist.rag.document import Section
from archivist.rag.parser.base import ParserBase
from archivist.rag.parser.structure import Block, sections_by_heading
from archivist.rag.parser.text import read_text

# A line of one repeated punctuation character: a title's underline or overline.
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")


class RSTParser(ParserBase):
    """`.rst` files → one Section per section title, with `heading_path` metadata.

    Titles are found the way reStructuredText defines them: a line under (and optionally
    over) a line of one repeated punctuation character at least as long; levels follow the
    order in which the adornment styles first appear. Body text, literal blocks and
    directives are kept as written. Bytes are decoded like `TextParser` does.
    """

    supported_media_types: ClassVar[list[str]] = ["text/x-rst"]

    def __init__(self, max_heading_level: int = 6, encoding: str = "utf-8") -> None:
        if not 1 <= max_heading_level <= 6:
            raise ValueError(f"max_heading_level must be 1–6, not {max_heading_level!r}")
        "".encode(encoding)  # unknown codec → LookupError now
        self.max_heading_level = max_heading_level
        self.encoding = encoding

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        text = read_text(file, filename, self.encoding)
        sections = await asyncio.to_thread(self.parse_text, text, filename)
        if not sections:
            raise ValueError(f"{filename}: the file holds no text besides titles")
        return sections

    def parse_text(self, text: str, filename: str) -> list[Section]:
        """Sections of the reStructuredText `text` (synchronous)."""
        lines = text.splitlines()
        styles: list[tuple[str, bool]] = []
        blocks: list[Block] = []
        body: list[str] = []

        def heading(char: str, overline: bool, title: str) -> None:
            if (char, overline) not in styles:
                styles.append((char, overline))
            blocks.append(Block("\n".join(body)))
            body.clear()
            blocks.append(Block(title, min(styles.index((char, overline)) + 1, 6)))

        i = 0
        while i < len(lines):
            line = lines[i]
            over = _ADORNMENT.match(line)
            if over and i + 2 < len(lines) and lines[i + 1].strip():
                under = _ADORNMENT.match(lines[i + 2])
                title = lines[i + 1].strip()
                if under and under.group(1) == over.group(1) and len(lines[i + 2]) >= len(title):
                    heading(over.group(1), True, title)
                    i += 3
                    continue
            if (
                line.strip()
                and not line[0].isspace()
                and not over
                and i + 1 < len(lines)
                and (i == 0 or not lines[i - 1].strip())
            ):
                under = _ADORNMENT.match(lines[i + 1])
                if under and len(lines[i + 1].rstrip()) >= len(line.rstrip()):
                    heading(under.group(1), False, line.strip())
                    i += 2
                    continue
            body.append(line)
            i += 1
        blocks.append(Block("\n".join(body)))
        return sections_by_heading(blocks, filename, {}, self.max_heading_level)
