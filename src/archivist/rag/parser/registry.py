"""Pick the parser for a file from its media type, extension or magic bytes."""

from __future__ import annotations

import mimetypes
import os
import zipfile
from collections.abc import Callable
from pathlib import PurePath

from archivist.errors import UnsupportedFileTypeError as UnsupportedFileTypeError
from archivist.rag.parser.base import ParserBase, extensions_for
from archivist.rag.parser.excel import XLSX_MEDIA_TYPE, ExcelParser
from archivist.rag.parser.html import HTMLParser
from archivist.rag.parser.image import ImageParser, sniff_image_type
from archivist.rag.parser.markdown import MarkdownParser
from archivist.rag.parser.ocr import Ocr
from archivist.rag.parser.ocr.reader import as_ocr
from archivist.rag.parser.pdf import PDFParser
from archivist.rag.parser.ppt import PPTX_MEDIA_TYPE, PPTParser
from archivist.rag.parser.rst import RSTParser
from archivist.rag.parser.text import TextParser
from archivist.rag.parser.word import DOCX_MEDIA_TYPE, WordParser

HEAD_BYTES = 4096
"""How much of a file's start its type is sniffed from."""


class ParserRegistry:
    """Maps media types to parser factories; `parser_for` resolves a file to a parser."""

    def __init__(self, ocr: Ocr | None = None) -> None:
        self._factories: dict[str, Callable[[], ParserBase]] = {}
        self._extensions: dict[str, str] = {}
        self._read_as: str | None = None
        self.ocr = ocr
        """The OCR its parsers read scans with (None: none)."""

    @property
    def identity(self) -> str:
        """What its parsers' output depends on besides the files: the OCR engine that reads
        scans ("" without one), so a file is read again when that changes."""
        if self.ocr is None or self.ocr.engine is None:
            return ""
        return f"ocr {self.ocr.engine.identity} dpi {self.ocr.dpi}"

    def register(self, parser_cls: type[ParserBase], factory: Callable[[], ParserBase]) -> None:
        """Route every media type and extension of `parser_cls` to `factory` (later wins)."""
        for media_type in parser_cls.supported_media_types:
            self._factories[media_type] = factory
        for media_type in parser_cls.supported_media_types:
            for ext in _extensions(parser_cls, media_type):
                self._extensions[ext] = media_type

    def supported_extensions(self) -> list[str]:
        """Every extension some registered parser reads."""
        return sorted(self._extensions)

    def media_type_for(self, filename: str, head: bytes | None = None) -> str | None:
        """Media type from the extension (or the type the system gives the name, unless
        that names a compressed file), else sniffed from the first bytes `head`."""
        ext = PurePath(filename).suffix.lower()
        if ext in self._extensions:
            return self._extensions[ext]
        guessed, encoding = mimetypes.guess_type(filename, strict=False)
        if guessed in self._factories and encoding is None:
            return guessed
        return sniff_media_type(head) if head else None

    def media_type_of(self, path: str | os.PathLike[str], name: str | None = None) -> str | None:
        """The media type the file at `path` (going by `name`, default its own) is read as,
        decided once for the CLI and the service alike: by the name (`media_type_for`) when
        a parser claims it, else by the first `HEAD_BYTES` (a zip by its members); None when
        neither is a type read here."""
        if self._read_as is not None:
            return self._read_as
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
        media_type = self.media_type_for(os.fspath(path) if name is None else name, head)
        if head.startswith(b"PK\x03\x04") and (media_type is None or media_type == ZIP_MEDIA_TYPE):
            media_type = _office_archive_type(os.fspath(path)) or media_type
        return media_type

    def reading_as(self, media_type: str) -> ParserRegistry:
        """These parsers, with every file read as `media_type`: for a file whose type was
        decided before (an upload's, when the service accepted it)."""
        pinned = ParserRegistry(self.ocr)
        pinned._factories, pinned._extensions = self._factories, self._extensions
        pinned._read_as = media_type
        return pinned

    def parser_for(
        self, filename: str, head: bytes | None = None, media_type: str | None = None
    ) -> ParserBase:
        """A parser for `filename` (or explicit `media_type`); unsupported → error naming it."""
        resolved = media_type or self.media_type_for(filename, head)
        if resolved is None or resolved not in self._factories:
            what = f"media type {resolved!r}" if resolved else "an unknown file type"
            supported = self.supported_extensions()
            raise UnsupportedFileTypeError(
                f"{what} is not supported",
                path=filename,
                media_type=resolved,
                supported=supported,
            )
        return self._factories[resolved]()

    def parser_for_path(self, path: str | os.PathLike[str]) -> ParserBase:
        """A parser for the file at `path`, of the type `media_type_of` decides."""
        name = os.fspath(path)
        if not os.path.isfile(name):
            raise FileNotFoundError(f"{name}: no such file")
        return self.parser_for(name, media_type=self.media_type_of(name))


def _extensions(parser_cls: type[ParserBase], media_type: str) -> list[str]:
    declared = parser_cls.supported_extensions()
    return [e for e in extensions_for(media_type) if e in declared]


# Office Open XML packages are zips; the main part's folder tells which kind.
_OFFICE_FOLDERS: tuple[tuple[str, str], ...] = (
    ("word/", DOCX_MEDIA_TYPE),
    ("xl/", XLSX_MEDIA_TYPE),
    ("ppt/", PPTX_MEDIA_TYPE),
)
ZIP_MEDIA_TYPE = "application/zip"


def _office_archive_type(path: str) -> str | None:
    """DOCX/XLSX/PPTX media type of the zip at `path` from its member names, else None."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    if "[Content_Types].xml" not in names:
        return None
    for folder, media_type in _OFFICE_FOLDERS:
        if any(name.startswith(folder) for name in names):
            return media_type
    return None


def sniff_media_type(head: bytes) -> str | None:
    """Media type of a file from its first bytes, for the types Archivist parses."""
    if b"%PDF-" in head[:1024]:
        return "application/pdf"
    image = sniff_image_type(head)
    if image:
        return image
    if head.startswith(b"PK\x03\x04"):  # a zip: an Office package names its folders early
        if b"[Content_Types].xml" in head:
            for folder, media_type in _OFFICE_FOLDERS:
                if folder.encode() in head:
                    return media_type
        return None
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of `head`
            return None
    if b"\x00" in head:
        return None
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:256].lower()
    if start.startswith((b"<!doctype html", b"<html")):
        return "text/html"
    return "text/plain"


def _untagged_ppt_parser(ocr: Ocr | None) -> PPTParser:
    """Slides without AgentScope's `<slide index=N>` text wrappers: the number is in the
    chunk's `slide` metadata and citation, and the tags were noise in what is embedded,
    matched by BM25 and read (after chunking, only a slide's first and last chunk had them)."""
    return PPTParser(slide_prefix=None, slide_suffix=None, ocr=ocr)


def default_registry(ocr: Ocr | str | None = None) -> ParserRegistry:
    """A registry with Archivist's built-in parsers and their default settings, except that
    PPTX slides are not wrapped in `<slide index=N>` tags (`PPTParser()` itself keeps
    AgentScope's default). `ocr` (an `Ocr`, "auto" or an engine's name) has scanned PDF
    pages, images and the pictures in documents read by OCR; None or "off" leaves them
    unread."""
    reader = as_ocr(ocr)
    registry = ParserRegistry(reader)
    registry.register(TextParser, TextParser)
    registry.register(HTMLParser, HTMLParser)
    registry.register(MarkdownParser, MarkdownParser)
    registry.register(RSTParser, RSTParser)
    registry.register(PDFParser, lambda: PDFParser(reader))
    registry.register(PPTParser, lambda: _untagged_ppt_parser(reader))
    registry.register(WordParser, lambda: WordParser(ocr=reader))
    registry.register(ExcelParser, lambda: ExcelParser(ocr=reader))
    registry.register(ImageParser, lambda: ImageParser(reader))
    return registry
