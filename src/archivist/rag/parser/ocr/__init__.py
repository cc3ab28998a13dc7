"""OCR: text from scanned PDF pages and images, offline, with Tesseract or RapidOCR.

Each name is imported on first use, so reading the choices (`choices`) loads no engine.
"""

from typing import TYPE_CHECKING

from archivist._util.lazy import lazy_submodule_exports

if TYPE_CHECKING:
    from archivist.rag.parser.ocr.cache import OcrCache
    from archivist.rag.parser.ocr.choices import DEFAULT_LANGUAGES, ENGINES
    from archivist.rag.parser.ocr.engine import OcrEngine, OcrError, OcrResult, PageImage
    from archivist.rag.parser.ocr.rapid import RapidOcrEngine
    from archivist.rag.parser.ocr.reader import OCR_HINT, Ocr, ocr_metadata
    from archivist.rag.parser.ocr.tesseract import TesseractEngine

_MODULES = {
    "cache": ["OcrCache"],
    "choices": ["DEFAULT_LANGUAGES", "ENGINES"],
    "engine": ["OcrEngine", "OcrError", "OcrResult", "PageImage"],
    "rapid": ["RapidOcrEngine"],
    "reader": ["OCR_HINT", "Ocr", "ocr_metadata"],
    "tesseract": ["TesseractEngine"],
}
__getattr__, __dir__ = lazy_submodule_exports(__name__, _MODULES)

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
