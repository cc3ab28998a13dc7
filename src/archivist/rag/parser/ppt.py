"""`PPTParser`: a PowerPoint deck's slides as text Sections and picture DataBlock Sections."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from archivist._util.extras import require
from archivist.errors import DocumentParseError
from archivist.message import TextBlock
from archivist.rag.document import Section
from archivist.rag.parser.archive import ArchiveLimits, check_archive
from archivist.rag.parser.base import BinaryParser
from archivist.rag.parser.image import embedded_image_sections
from archivist.rag.parser.ocr import Ocr
from archivist.rag.parser.ocr.reader import as_ocr
from archivist.rag.parser.table import TableFormat, check_table_format, render_table

PPTX_MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
_EMPTY = "the deck has no text, tables or pictures"


class PPTParser(BinaryParser):
    """`.pptx` decks: per slide, text and tables merge into one Section (tables apart if
    `separate_table`), each picture is its own DataBlock Section; `{"slide": n}` from 1.

    Shapes are walked in order, group shapes included. `slide_prefix`/`slide_suffix` wrap
    each text Section (`{index}` is the slide number); None turns a tag off. With `ocr` (an
    `Ocr`, or "auto", "tesseract", "rapidocr") the text on each picture follows it as a
    text Section, as `ImageParser` reads image files.

    Zip-bomb guard: python-pptx inflates every part of the archive into memory, so before
    it opens the file the zip's directory is checked against these limits (class
    attributes, overridable per instance through the constructor) and a deck over any of
    them is an `ArchiveTooLargeError` (a ValueError) naming the file. The declared sizes can
    be trusted as upper bounds: Python's zipfile never inflates a part past its declared
    size (a part that tries to fails its size/CRC check, a ValueError here too).

    - `max_parts`: members in the archive;
    - `max_part_size`: declared uncompressed bytes of one member;
    - `max_total_size`: declared uncompressed bytes of all members together;
    - `max_compression_ratio`: uncompressed/compressed bytes of one member, checked for
      members over `ratio_check_min_size` bytes (real decks' XML stays far below it).
    """

    supported_media_types: ClassVar[list[str]] = [PPTX_MEDIA_TYPE]
    nothing_found: ClassVar[str] = _EMPTY

    max_parts: int = ArchiveLimits.max_parts
    max_part_size: int = ArchiveLimits.max_part_size
    max_total_size: int = ArchiveLimits.max_total_size
    max_compression_ratio: float = ArchiveLimits.max_compression_ratio
    ratio_check_min_size: int = ArchiveLimits.ratio_check_min_size

    def __init__(
        self,
        include_image: bool = True,
        separate_table: bool = False,
        table_format: TableFormat = "markdown",
        slide_prefix: str | None = "<slide index={index}>",
        slide_suffix: str | None = "</slide>",
        *,
        max_parts: int | None = None,
        max_part_size: int | None = None,
        max_total_size: int | None = None,
        max_compression_ratio: float | None = None,
        ocr: Ocr | str | None = None,
    ) -> None:
        check_table_format(table_format)
        self.ocr = as_ocr(ocr)
        if max_parts is not None:
            self.max_parts = max_parts
        if max_part_size is not None:
            self.max_part_size = max_part_size
        if max_total_size is not None:
            self.max_total_size = max_total_size
        if max_compression_ratio is not None:
            self.max_compression_ratio = max_compression_ratio
        self.include_image = include_image
        self.separate_table = separate_table
        self.table_format = table_format
        self.slide_prefix = slide_prefix
        self.slide_suffix = slide_suffix

    def _open(self, data: bytes, filename: str) -> Any:
        from pptx import Presentation
        from pptx.exc import PackageNotFoundError

        limits = ArchiveLimits(
            self.max_parts,
            self.max_part_size,
            self.max_total_size,
            self.max_compression_ratio,
            self.ratio_check_min_size,
        )
        check_archive(data, filename, "PPTX", limits)
        try:
            return Presentation(io.BytesIO(data))
        except (PackageNotFoundError, KeyError, zipfile.BadZipFile) as exc:
            raise DocumentParseError(
                f"not a valid PPTX presentation: {exc}", filename=filename
            ) from exc
        except Exception as exc:  # python-pptx/lxml raise many types for broken parts
            raise DocumentParseError(
                f"corrupt PPTX: {type(exc).__name__}: {exc}", filename=filename
            ) from exc

    def iter_sections(self, data: bytes, filename: str) -> list[Section]:
        require("office", "pptx", f"reading {filename}")
        presentation = self._open(data, filename)
        sections: list[Section] = []
        try:  # python-pptx raises ValueError, KeyError, ... that do not name the file
            for number, slide in enumerate(presentation.slides, start=1):
                sections.extend(self._slide_sections(slide, number, filename))
        except Exception as exc:
            raise DocumentParseError(
                f"corrupt PPTX: {type(exc).__name__}: {exc}", filename=filename
            ) from exc
        return sections

    def _slide_sections(self, slide: Any, number: int, filename: str) -> Iterator[Section]:
        texts: list[str] = []
        pictures: list[Section] = []
        for shape in _walk(slide.shapes):
            if shape.has_text_frame:
                text = shape.text_frame.text.strip()
                if text:
                    texts.append(text)
            elif getattr(shape, "has_table", False) and shape.has_table:
                rendered = self._table(shape.table)
                if rendered and self.separate_table:  # text before it, then it: shape order
                    if texts:
                        yield self._text_section("\n\n".join(texts), number, filename)
                        texts = []
                    yield self._text_section(rendered, number, filename)
                elif rendered:
                    texts.append(rendered)
            elif self.include_image and _is_picture(shape):
                image = shape.image
                pictures += embedded_image_sections(
                    image.blob, filename, image.filename, {"slide": number}, self.ocr
                )
        if texts:
            yield self._text_section("\n\n".join(texts), number, filename)
        yield from pictures

    def _table(self, table: Any) -> str:
        rows = [[c.text for c in row.cells] for row in table.rows]
        if not rows or not any(any(c.strip() for c in r) for r in rows):
            return ""
        return render_table(rows, self.table_format)

    def _text_section(self, body: str, number: int, filename: str) -> Section:
        parts = [body]
        if self.slide_prefix is not None:
            parts.insert(0, self.slide_prefix.format(index=number))
        if self.slide_suffix is not None:
            parts.append(self.slide_suffix.format(index=number))
        return Section(
            content=TextBlock(text="\n".join(parts)),
            source=filename,
            metadata={"slide": number},
        )


def _walk(shapes: Iterable[Any]) -> Iterator[Any]:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    for shape in shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _walk(shape.shapes)
        else:
            yield shape


def _is_picture(shape: Any) -> bool:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    if shape.shape_type == MSO_SHAPE_TYPE.PICTURE:
        return True
    try:  # picture placeholders carry an image without being PICTURE shapes
        return shape.image is not None
    except (AttributeError, ValueError):
        return False
