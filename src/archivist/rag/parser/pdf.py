"""`PDFParser`: one Section per page, via PDFium (pypdfium2); scanned pages through OCR."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Generator
from typing import ClassVar

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from archivist.errors import DocumentParseError, ScansUnreadError
from archivist.message import TextBlock
from archivist.rag.document import Section
from archivist.rag.parser.base import BinaryParser, read_binary
from archivist.rag.parser.ocr import OCR_HINT, Ocr, PageImage, ocr_metadata
from archivist.rag.parser.ocr.reader import as_ocr

logger = logging.getLogger(__name__)

# PDFium is not thread-safe: every call into it from any thread goes through this lock.
PDFIUM_LOCK = threading.Lock()

_NO_TEXT = "the PDF has no extractable text"

SCAN_TEXT_CHARS = 64
"""A page with fewer characters of text than this whose pictures cover `SCAN_COVER` of it
is read as a scan (by OCR), its text layer aside."""
SCAN_COVER = 0.3


class PDFParser(BinaryParser):
    """PDF text, one Section per page with `{"page": n}` counted from 1.

    Pages are opened, read and closed one at a time, so a long PDF never holds all its
    page objects at once. With `ocr` (an `Ocr`, or "auto", "tesseract", "rapidocr"), a
    page that is a scan (little or no text, mostly pictures) is rendered and read by OCR,
    and its Section says `ocr: true` and `ocr_confidence`. Without it, scanned pages are
    skipped. A PDF with no text at all is a ValueError rather than a silent empty result.
    """

    supported_media_types: ClassVar[list[str]] = ["application/pdf"]

    def __init__(self, ocr: Ocr | str | None = None) -> None:
        self.ocr = as_ocr(ocr)

    @property
    def nothing_found(self) -> str:  # type: ignore[override]
        """Why a PDF gave no Section: no text layer, and OCR off, unavailable or empty."""
        if self.ocr is None:
            return f"{_NO_TEXT} (its pages are scans, and OCR is off)"
        try:
            engine = self.ocr.engine
        except ValueError as exc:  # an engine named but not installed
            return f"{_NO_TEXT}; OCR: {exc}"
        if engine is None:
            return f"{_NO_TEXT}: {OCR_HINT}"
        return f"{_NO_TEXT}, and OCR found no text on its pages"

    async def stream_sections(self, file: bytes | str, filename: str) -> AsyncIterator[Section]:
        """The pages' Sections one at a time, each read in a worker thread."""
        data = read_binary(file, filename)
        pages = self.iter_sections(data, filename)
        done = object()
        found = False
        try:
            while True:
                section = await asyncio.to_thread(next, pages, done)
                if section is done:
                    break
                assert isinstance(section, Section)
                found = True
                yield section
        finally:
            await asyncio.to_thread(pages.close)
        if not found:
            raise DocumentParseError(self.nothing_found, filename=filename)

    def iter_sections(self, data: bytes, filename: str) -> Generator[Section, None, None]:
        """Yield the Sections of PDF `data` page by page (synchronous, holds one page)."""
        if b"%PDF-" not in data[:1024]:
            raise DocumentParseError("not a PDF file (no %PDF- header)", filename=filename)
        with PDFIUM_LOCK:
            document = self._open(data, filename)
            try:
                page_count = len(document)
            except pdfium.PdfiumError as exc:
                document.close()
                raise DocumentParseError(f"unreadable PDF: {exc}", filename=filename) from exc
        unread = found = 0
        try:
            for index in range(page_count):
                with PDFIUM_LOCK:
                    text, scan = self._page_text(document, index, filename, self.ocr)
                metadata: dict[str, object] = {"page": index + 1}
                if scan is not None:
                    read = self._read_scan(scan, filename, index, page_count)
                    if read is None:
                        unread += 1
                    elif read[0]:
                        text, metadata = read[0], {**metadata, **read[1]}
                if text:
                    found += 1
                    yield Section(content=TextBlock(text=text), source=filename, metadata=metadata)
        finally:
            with PDFIUM_LOCK:
                document.close()
        if unread and not found:  # every page a scan, and no engine to read them
            raise ScansUnreadError(self.nothing_found, filename=filename)
        if unread:
            logger.warning("%s: %d scanned page(s) left unread: %s", filename, unread, OCR_HINT)

    def _read_scan(
        self, scan: PageImage, filename: str, index: int, page_count: int
    ) -> tuple[str, dict[str, object]] | None:
        """The OCR text of a scanned page and its metadata; None without an engine."""
        assert self.ocr is not None
        try:
            result = self.ocr.read(scan, filename, index + 1, page_count)
        except ValueError as exc:  # OcrError, or an engine named but not installed
            raise DocumentParseError(f"OCR of page {index + 1}: {exc}", filename=filename) from exc
        if result is None:
            return None
        return result.text.strip(), ocr_metadata(result)

    @staticmethod
    def _open(data: bytes, filename: str) -> pdfium.PdfDocument:
        try:
            return pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            reason = str(exc)
            if "password" in reason.lower():
                raise DocumentParseError(
                    "the PDF is encrypted (password required)", filename=filename
                ) from exc
            raise DocumentParseError(
                f"corrupt or unsupported PDF: {reason}", filename=filename
            ) from exc

    @staticmethod
    def _page_text(
        document: pdfium.PdfDocument, index: int, filename: str, ocr: Ocr | None
    ) -> tuple[str, PageImage | None]:
        """The page's text layer, and its picture for OCR when `ocr` is given and the page is
        a scan (see `SCAN_TEXT_CHARS`)."""
        try:
            page = document[index]
        except pdfium.PdfiumError as exc:
            raise DocumentParseError(
                f"page {index + 1} is unreadable: {exc}", filename=filename
            ) from exc
        try:
            textpage = page.get_textpage()
            try:
                raw = textpage.get_text_range()
            finally:
                textpage.close()
            text: str = raw.replace("\r\n", "\n").replace("\r", "\n").replace("\x02", "")
            text = text.strip()
            scan = None
            if ocr is not None and _is_scan(page, text):
                scan = _render(page, ocr)
        except pdfium.PdfiumError as exc:
            raise DocumentParseError(
                f"text of page {index + 1} is unreadable: {exc}", filename=filename
            ) from exc
        finally:
            page.close()
        return text, scan


def _is_scan(page: pdfium.PdfPage, text: str) -> bool:
    """Whether the page is a picture of text: little text, and pictures over much of it."""
    if sum(not c.isspace() for c in text) >= SCAN_TEXT_CHARS:
        return False
    width, height = page.get_size()
    if width <= 0 or height <= 0:
        return False
    covered = 0.0
    for image in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=4):
        left, bottom, right, top = image.get_bounds()
        left, right = max(left, 0.0), min(right, width)
        bottom, top = max(bottom, 0.0), min(top, height)
        covered += max(right - left, 0.0) * max(top - bottom, 0.0)
    return bool(covered >= SCAN_COVER * width * height)


def _render(page: pdfium.PdfPage, ocr: Ocr) -> PageImage:
    """The page in grayscale at `ocr.dpi`, scaled down to `ocr.max_pixels` if larger."""
    width, height = page.get_size()  # in points, 72 to the inch
    scale = ocr.dpi / 72
    fit = ocr.scale_for(width * scale, height * scale)
    scale *= fit if fit == 1.0 else fit * 0.995  # PDFium rounds the bitmap's size up
    bitmap = page.render(scale=scale, grayscale=True, may_draw_forms=False)
    try:
        pixels = bitmap.to_numpy()
        return PageImage(pixels.shape[1], pixels.shape[0], pixels.tobytes())
    finally:
        bitmap.close()
