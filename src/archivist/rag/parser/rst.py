"""`RSTParser`: a reStructuredText file cut at its section titles."""

from __future__ import annotations

import re
from typing import ClassVar

from archivist.rag.document import Section
from archivist.rag.parser.heading_text import HeadingTextParser
from archivist.rag.parser.structure import Block, sections_by_heading

# A line of one repeated punctuation character: a title's underline or overline.
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")


class RSTParser(HeadingTextParser):
    """`.rst` files → one Section per section title, with `heading_path` metadata.

    Titles are found the way reStructuredText defines them: a line under (and optionally
    over) a line of one repeated punctuation character at least as long; levels follow the
    order in which the adornment styles first appear. Body text, literal blocks and
    directives are kept as written. Bytes are decoded like `TextParser` does.
    """

    supported_media_types: ClassVar[list[str]] = ["text/x-rst"]

    empty_message: ClassVar[str] = "the file holds no text besides titles"

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
