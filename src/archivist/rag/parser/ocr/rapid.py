"""`RapidOcrEngine`: RapidOCR (PP-OCR models on onnxruntime, `pip install 'archivist[ocr]'`).

Its models ship in the wheel, so it reads offline with no system package; it reads
Chinese and English with one model and needs more memory than Tesseract: a parse child
reading with it gets `memory_mb` more address space once its first page is read.
"""

from __future__ import annotations

import importlib.metadata
import threading
from collections.abc import Sequence
from typing import Any

from archivist._util.extras import require
from archivist.rag.parser.ocr.engine import (
    DEFAULT_LANGUAGES,
    Line,
    OcrEngine,
    OcrError,
    OcrResult,
    PageImage,
    page_text,
    weighted_confidence,
)

LANGUAGES = frozenset(DEFAULT_LANGUAGES)
"""What the bundled models read: English and Simplified Chinese."""


class RapidOcrEngine(OcrEngine):
    """RapidOCR with its bundled detection, direction and recognition models."""

    name = "rapidocr"
    label = "RapidOCR"
    memory_mb = 1536  # with parsing's default 512 MiB: the 2 GiB a process reading pages needs

    def __init__(self, languages: Sequence[str] = DEFAULT_LANGUAGES) -> None:
        unknown = sorted(set(languages) - LANGUAGES)
        if isinstance(languages, str) or not languages or unknown:
            raise OcrError(
                f"RapidOCR reads {' and '.join(sorted(LANGUAGES))} only"
                + (f", not {', '.join(unknown)}" if unknown else "")
            )
        self.languages = tuple(languages)
        self._reader: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RapidOcrEngine(languages={self.languages!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"languages": self.languages}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["languages"])  # type: ignore[misc]

    @property
    def identity(self) -> str:
        return f"rapidocr-onnxruntime {importlib.metadata.version('rapidocr-onnxruntime')}"

    def recognize(self, page: PageImage) -> OcrResult:
        import numpy  # here: a parse child that reads no scan never maps numpy's libraries

        pixels = numpy.frombuffer(page.pixels, dtype=numpy.uint8).reshape(page.height, page.width)
        with self._lock:  # one page at a time through one set of sessions
            found, _ = self._loaded()(pixels)
        return _result(found or [])

    def _loaded(self) -> Any:
        if self._reader is None:
            module = require("ocr", "rapidocr_onnxruntime", "OCR with RapidOCR")
            self._reader = module.RapidOCR()
        return self._reader


def _result(found: list[Any]) -> OcrResult:
    """RapidOCR's lines (box, text, score), in reading order, as text and confidence."""
    lines: list[Line] = []
    pieces: list[tuple[str, float]] = []
    for box, text, score in found:
        words = str(text).strip()
        if not words:
            continue
        rows = [point[1] for point in box]
        lines.append(Line(words, min(rows), max(rows)))
        pieces.append((words, float(score)))
    return OcrResult(text=page_text(lines), confidence=weighted_confidence(pieces))
