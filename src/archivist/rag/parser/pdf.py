"""`PDFParser`: one Section per page, via PDFium (pypdfium2)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Generator
from typing import ClassVar

import pypdfium2 as pdfium

from archivist.errors import DocumentParseError
from archivist.message import TextBlock
from archivist.rag.document import Section
from archivist.rag.parser.base import BinaryParser, read_binary

# PDFium is not thread-safe: every call into it from any thread goes through this lock.
PDFIUM_LOCK = threading.Lock()

_NO_TEXT = "the PDF has no extractable text (scanned pages need OCR first)"


class PDFParser(BinaryParser):
    """PDF text, one Section per page with `{"page": n}` counted from 1.

    Pages are opened, read and closed one at a time, so a long PDF never holds all its
    page objects at once. Pages without text (scans) are skipped; a PDF with no text at all
    is a ValueError rather than a silent empty result. OCR is not attempted.
    """

    supported_media_types: ClassVar[list[str]] = ["application/pdf"]
    nothing_found: ClassVar[str] = _NO_TEXT

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
            raise DocumentParseError(_NO_TEXT, filename=filename)

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
        try:
            for index in range(page_count):
                with PDFIUM_LOCK:
                    text = self._page_text(document, index, filename)
                if text:
                    yield Section(
                        content=TextBlock(text=text),
                        source=filename,
                        metadata={"page": index + 1},
                    )
        finally:
            with PDFIUM_LOCK:
                document.close()

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
    def _page_text(document: pdfium.PdfDocument, index: int, filename: str) -> str:
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
        except pdfium.PdfiumError as exc:
            raise DocumentParseError(
                f"text of page {index + 1} is unreadable: {exc}", filename=filename
            ) from exc
        finally:
            page.close()
        text: str = raw.replace("\r\n", "\n").replace("\r", "\n").replace("\x02", "")
        return text.strip()
