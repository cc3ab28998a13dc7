"""`MarkdownParser`: a Markdown file cut at its headings, each block kept as written."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from markdown_it import MarkdownIt
from markdown_it.token import Token

from archivist.rag.document import Section
from archivist.rag.parser.heading_text import HeadingTextParser
from archivist.rag.parser.structure import Block, sections_by_heading
from archivist.rag.parser.table import table_to_markdown

# YAML front matter: `---` on the first line up to the next `---` (or `...`) line.
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.M)


def _table(tokens: list[Token], start: int) -> str:
    """The table opening at `tokens[start]` as a canonical pipe table (one line per row, a
    leading `|`), so chunkers see its rows whatever way it was written."""
    rows: list[list[str]] = []
    for token in tokens[start + 1 :]:
        if token.type == "table_close":
            break
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows:
            rows[-1].append(token.content.strip())
    return table_to_markdown(rows) if rows else ""


def _inline_text(token: Token) -> str:
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts).strip()


class MarkdownParser(HeadingTextParser):
    """`.md` files → one Section per heading (CommonMark + tables, via markdown-it-py).

    Every block between headings is kept exactly as written, so fenced code, lists and
    tables stay whole inside their Section; a table is rewritten in the one pipe-table form
    (`| a | b |` rows under a `| --- |` line, padding dropped) that chunkers cut by rows.
    Metadata: `heading_path` (titles of the enclosing headings) and `title` from YAML front
    matter, if any; front matter itself is not indexed. Headings deeper than
    `max_heading_level` stay inside their parent Section.
    Bytes are decoded like `TextParser` does (BOM, `encoding`, then detection).
    """

    supported_media_types: ClassVar[list[str]] = ["text/markdown"]

    def parse_text(self, text: str, filename: str) -> list[Section]:
        """Sections of the Markdown `text` (synchronous)."""
        metadata: dict[str, Any] = {}
        front = _FRONT_MATTER.match(text)
        if front:
            title = _FRONT_TITLE.search(front.group(1) or "")
            if title:
                metadata["title"] = title.group(1).strip("\"'")
            text = text[front.end() :]
        lines = text.splitlines()
        tokens = MarkdownIt("commonmark").enable("table").parse(text)
        blocks: list[Block] = []
        for index, token in enumerate(tokens):
            if token.level != 0 or token.map is None or token.nesting == -1:
                continue
            if token.type == "heading_open":
                blocks.append(Block(_inline_text(tokens[index + 1]), int(token.tag[1])))
            elif token.type == "table_open":
                blocks.append(Block(_table(tokens, index)))
            else:
                start, end = token.map
                blocks.append(Block("\n".join(lines[start:end]).strip("\n")))
        return sections_by_heading(blocks, filename, metadata, self.max_heading_level)
