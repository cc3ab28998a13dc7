"""Parsers: files in, Sections out.

Each name is imported on first use, so reading the OCR choices (`ocr.choices`) loads no parser.
"""

from typing import TYPE_CHECKING

from archivist._util.lazy import lazy_submodule_exports

if TYPE_CHECKING:
    from archivist.rag.parser.archive import ArchiveLimits, ArchiveTooLargeError
    from archivist.rag.parser.base import BinaryParser, ParserBase
    from archivist.rag.parser.excel import ExcelParser
    from archivist.rag.parser.html import HTMLParser
    from archivist.rag.parser.image import ImageParser
    from archivist.rag.parser.markdown import MarkdownParser
    from archivist.rag.parser.pdf import PDFParser
    from archivist.rag.parser.ppt import PPTParser
    from archivist.rag.parser.registry import (
        ParserRegistry,
        UnsupportedFileTypeError,
        default_registry,
    )
    from archivist.rag.parser.rst import RSTParser
    from archivist.rag.parser.text import TextParser
    from archivist.rag.parser.word import WordParser

_MODULES = {
    "archive": ["ArchiveLimits", "ArchiveTooLargeError"],
    "base": ["BinaryParser", "ParserBase"],
    "excel": ["ExcelParser"],
    "html": ["HTMLParser"],
    "image": ["ImageParser"],
    "markdown": ["MarkdownParser"],
    "pdf": ["PDFParser"],
    "ppt": ["PPTParser"],
    "registry": ["ParserRegistry", "UnsupportedFileTypeError", "default_registry"],
    "rst": ["RSTParser"],
    "text": ["TextParser"],
    "word": ["WordParser"],
}
__getattr__, __dir__ = lazy_submodule_exports(__name__, _MODULES)

__all__ = [
    "ArchiveLimits",
    "ArchiveTooLargeError",
    "BinaryParser",
    "ExcelParser",
    "HTMLParser",
    "ImageParser",
    "MarkdownParser",
    "PDFParser",
    "PPTParser",
    "ParserBase",
    "ParserRegistry",
    "RSTParser",
    "TextParser",
    "UnsupportedFileTypeError",
    "WordParser",
    "default_registry",
]
