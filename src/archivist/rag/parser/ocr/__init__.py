"""OCR: text from scanned PDF pages and images, offline, with Tesseract or RapidOCR."""

from archivist.rag.parser.ocr.cache import OcrCache
from archivist.rag.parser.ocr.engine import (
    DEFAULT_LANGUAGES,
    OcrEngine,
    OcrError,
    OcrResult,
    PageImage,
)
from archivist.rag.parser.ocr.rapid import RapidOcrEngine
from archivist.rag.parser.ocr.reader import ENGINES, OCR_HINT, Ocr, ocr_metadata
from archivist.rag.parser.ocr.tesseract import TesseractEngine

__all__ = [
    "DEFAULT_LANGUAGES",
    "ENGINES",
    "OCR_HINT",
    "Ocr",
    "OcrCache",
    "OcrEngine",
    "OcrError",
    "OcrResult",
    "PageImage",
    "RapidOcrEngine",
    "TesseractEngine",
    "ocr_metadata",
]
