"""`RSTParser`: a reStructuredText file cut at its section titles."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from archivist.rag.document import Section
from archivist.rag.parser.heading_text import HeadingTextParser
from archivist.rag.parser.structure import Block, sections_by_heading

# A line of one repeated punctuation character: a title's underline or overline.
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")
# A field of a field list: `:name: body` (the name may hold spaces and escaped colons).
_FIELD = re.compile(r"^:((?:[^:\\\s]|\\.)(?:[^:\\]|\\.)*):(?:\s+(.*?))?\s*$")


def _field_list(lines: list[str], start: int) -> tuple[dict[str, str], int]:
    """The field list starting at line `start` (name → body, continuation lines joined) and
    the line after it; `({}, start)` when no field list starts there."""
    fields: dict[str, str] = {}
    i, name = start, None
    while i < len(lines):
        match = _FIELD.match(lines[i])
        if match:
            name = match.group(1).replace("\\", "").strip().lower()
            fields[name] = (match.group(2) or "").strip()
        elif name is not None and lines[i][:1].isspace() and lines[i].strip():
            fields[name] = f"{fields[name]} {lines[i].strip()}".strip()
        else:
            break
        i += 1
    return fields, i


class RSTParser(HeadingTextParser):
    """`.rst` files → one Section per section title, with `heading_path` metadata.

    Titles are found the way reStructuredText defines them: a line under (and optionally
    over) a line of one repeated punctuation character at least as long; levels follow the
    order in which the adornment styles first appear. Body text, literal blocks and
    directives are kept as written. Bytes are decoded like `TextParser` does.

    A field list that opens the document, before or right after its title (docutils'
    bibliographic fields, Sphinx's file-wide metadata: `:title:`, `:author:`, `:orphan:`...)
    is metadata, not text: every Section gets `fields` (name in lower case → text) and, from
    a `:title:` field, `title`. Field lists further down (`:param x:`) stay text.
    """

    supported_media_types: ClassVar[list[str]] = ["text/x-rst"]

    empty_message: ClassVar[str] = "the file holds no text besides titles"

    def parse_text(self, text: str, filename: str) -> list[Section]:
        """Sections of the reStructuredText `text` (synchronous)."""
        lines = text.splitlines()
        styles: list[tuple[str, bool]] = []
        blocks: list[Block] = []
        body: list[str] = []
        metadata: dict[str, Any] = {}
        headings, seen_text = 0, False  # a field list opens the document until either grows

        def heading(char: str, overline: bool, title: str) -> None:
            nonlocal headings
            headings += 1
            if (char, overline) not in styles:
                styles.append((char, overline))
            blocks.append(Block("\n".join(body)))
            body.clear()
            blocks.append(Block(title, min(styles.index((char, overline)) + 1, 6)))

        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith(":") and not seen_text and headings <= 2 and not metadata:
                fields, after = _field_list(lines, i)
                if fields:  # before or after the title (and subtitle): the document's fields
                    metadata["fields"] = fields
                    if fields.get("title"):
                        metadata["title"] = fields["title"]
                    i = after
                    continue
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
                # docutils accepts an underline shorter than the title (with a warning)
                if under and len(lines[i + 1].rstrip()) >= min(len(line.rstrip()), 4):
                    heading(under.group(1), False, line.strip())
                    i += 2
                    continue
            body.append(line)
            seen_text = seen_text or bool(line.strip() and not line.startswith(("..", " ", "\t")))
            i += 1
        blocks.append(Block("\n".join(body)))
        return sections_by_heading(blocks, filename, metadata, self.max_heading_level)
