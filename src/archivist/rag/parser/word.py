"""`WordParser`: a `.docx` document's paragraphs under their headings, tables and pictures."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any, ClassVar

from archivist._util.extras import require
from archivist.errors import DocumentParseError
from archivist.rag.document import Section
from archivist.rag.parser.archive import ArchiveLimits, check_archive
from archivist.rag.parser.base import BinaryParser
from archivist.rag.parser.image import embedded_image_sections
from archivist.rag.parser.ocr import Ocr
from archivist.rag.parser.ocr.reader import as_ocr
from archivist.rag.parser.structure import Block, sections_by_heading
from archivist.rag.parser.table import TableFormat, check_table_format, render_table

DOCX_MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_EMPTY = "the document has no text, tables or pictures"

_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
# The WordprocessingML element names the walk looks for, in lxml's {namespace}tag spelling
# (what python-docx's `qn` gives), so the module loads without the office extra.
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_BLIP = "{http://schemas.openxmlformats.org/drawingml/2006/main}blip"
_P, _TBL, _SDT, _SDT_CONTENT = f"{_W}p", f"{_W}tbl", f"{_W}sdt", f"{_W}sdtContent"
_EMBED = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"


_TOC_STYLE = re.compile(r"^toc\s*\d|^toc heading$", re.IGNORECASE)


def _style_kind(paragraph: Any) -> tuple[int | None, str]:
    """(heading level 1–6 or None, "list", "toc" or "") of a paragraph's style; a style
    based on "Heading N" (custom heading styles usually are) counts as that heading."""
    style = paragraph.style
    name = (style.name or "") if style is not None else ""
    role = "toc" if _TOC_STYLE.match(name) else "list" if name.lower().startswith("list") else ""
    for _ in range(4):
        if style is None:
            break
        match = _HEADING_STYLE.match(style.name or "")
        if match:
            return min(int(match.group(1)), 6), role
        style = style.base_style
    return None, role


def _body_elements(body: Any) -> Iterator[Any]:
    """The body's paragraphs and tables in order, including those inside content controls."""
    stack = list(reversed(list(body.iterchildren())))
    while stack:
        element = stack.pop()
        if element.tag in (_SDT, _SDT_CONTENT):
            stack.extend(reversed(list(element.iterchildren())))
        elif element.tag in (_P, _TBL):
            yield element


class WordParser(BinaryParser):
    """Word `.docx` files → one Section per heading ("Heading 1"… styles), with
    `heading_path` metadata; the document's core-properties title, if set, as `title`.

    Tables are rendered as Markdown or JSON (`table_format`, like `PPTParser`) and stay in
    their heading's Section unless `separate_table`; with `include_image`, pictures become
    DataBlock Sections in reading order, checked like `ImageParser` checks images (pictures
    that fail, or EMF/TIFF ones, are skipped), with `ocr` each followed by the text on it.
    The archive is checked against
    `archive_limits` (a zip bomb → `ArchiveTooLargeError`) before it is opened.
    """

    supported_media_types: ClassVar[list[str]] = [DOCX_MEDIA_TYPE]
    nothing_found: ClassVar[str] = _EMPTY
    archive_limits: ClassVar[ArchiveLimits] = ArchiveLimits()

    def __init__(
        self,
        include_image: bool = True,
        separate_table: bool = False,
        table_format: TableFormat = "markdown",
        *,
        ocr: Ocr | str | None = None,
    ) -> None:
        check_table_format(table_format)
        self.ocr = as_ocr(ocr)
        self.include_image = include_image
        self.separate_table = separate_table
        self.table_format = table_format

    def iter_sections(self, data: bytes, filename: str) -> list[Section]:
        require("office", "docx", f"reading {filename}")
        from docx import Document

        names = check_archive(data, filename, "DOCX", self.archive_limits)
        if not any(name.startswith("word/") for name in names):
            raise DocumentParseError(
                "not a DOCX document (no word/ part in the archive)", filename=filename
            )
        try:
            document = Document(io.BytesIO(data))
            title = (document.core_properties.title or "").strip()
            blocks = list(self._blocks(document, filename))
        except Exception as exc:  # python-docx/lxml raise many types for broken parts
            raise DocumentParseError(
                f"corrupt DOCX: {type(exc).__name__}: {exc}", filename=filename
            ) from exc
        metadata: dict[str, Any] = {"title": title} if title else {}
        return sections_by_heading(blocks, filename, metadata)

    def _blocks(self, document: Any, filename: str) -> Iterator[Block]:
        from docx.table import Table
        from docx.text.paragraph import Paragraph

        body = document.element.body
        list_run: list[str] = []
        kinds: dict[str | None, tuple[int | None, str]] = {}  # style lookups are slow
        for child in _body_elements(body):
            if child.tag == _P:
                paragraph = Paragraph(child, document)
                text = paragraph.text.strip()
                style_id = child.style
                if style_id not in kinds:
                    kinds[style_id] = _style_kind(paragraph)
                level, role = kinds[style_id] if text else (None, "")
                if role == "toc":  # a generated table of contents: the headings say it all
                    continue
                numbered = child.pPr is not None and child.pPr.numPr is not None
                if text and level is None and (role == "list" or numbered):
                    list_run.append(f"- {text}")
                    continue
                if list_run:
                    yield Block("\n".join(list_run))
                    list_run = []
                if text:
                    yield Block(text, level)
                if self.include_image:
                    yield from self._pictures(child, document, filename, self.ocr)
            elif child.tag == _TBL:
                if list_run:
                    yield Block("\n".join(list_run))
                    list_run = []
                rows = [
                    [cell.text.strip() for cell in row.cells] for row in Table(child, document).rows
                ]
                if any(any(c for c in row) for row in rows):
                    yield Block(render_table(rows, self.table_format), alone=self.separate_table)
        if list_run:
            yield Block("\n".join(list_run))

    @staticmethod
    def _pictures(paragraph: Any, document: Any, filename: str, ocr: Ocr | None) -> Iterator[Block]:
        for blip in paragraph.iter(_BLIP):
            rel_id = blip.get(_EMBED)
            part = document.part.related_parts.get(rel_id) if rel_id else None
            blob = getattr(part, "blob", None)
            if not blob:
                continue
            name = str(getattr(part, "partname", rel_id)).rsplit("/", 1)[-1]
            for section in embedded_image_sections(blob, filename, name, {}, ocr):
                yield Block("", section=section)
