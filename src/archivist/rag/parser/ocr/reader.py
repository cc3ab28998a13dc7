"""`Ocr`: how parsers read pictures of text: which engine, which languages, at what
resolution, and where results are cached."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from archivist._util import address_space
from archivist._util.extras import installed
from archivist.errors import InvalidArgumentError, MissingExtraError
from archivist.rag.parser.ocr.cache import OcrCache
from archivist.rag.parser.ocr.choices import DPI, ENGINES, MAX_DPI, MIN_DPI, EngineName
from archivist.rag.parser.ocr.engine import (
    DEFAULT_LANGUAGES,
    LOW_CONFIDENCE,
    OcrEngine,
    OcrResult,
    PageImage,
)
from archivist.rag.parser.ocr.rapid import LANGUAGES as RAPID_LANGUAGES
from archivist.rag.parser.ocr.rapid import RapidOcrEngine
from archivist.rag.parser.ocr.tesseract import (
    TesseractEngine,
    missing_languages,
    tesseract_installed,
    tesseract_package,
)

EngineChoice = Literal["auto", EngineName]

OCR_HINT = (
    "to read scans, install RapidOCR (pip install 'archivist[ocr]') "
    "or Tesseract (apt install tesseract-ocr tesseract-ocr-chi-sim)"
)
"""One line saying how to make OCR available."""

MAX_PIXELS = 24_000_000
"""Largest picture handed to an engine (an A4 page at 400 dpi is 15.6 million pixels);
larger pages and images are scaled down to it first."""


class Ocr:
    """OCR for parsers: `engine` "auto" (Tesseract if it has every language, else RapidOCR
    if installed, else none), "tesseract", "rapidocr" or an `OcrEngine`; `languages` by
    Tesseract's names; results cached in `cache_dir` when given.

    A parser holding an `Ocr` whose "auto" finds no engine reads as it would without OCR,
    and says `OCR_HINT` where a scan goes unread.
    """

    def __init__(
        self,
        engine: EngineChoice | OcrEngine = "auto",
        *,
        languages: Sequence[str] = DEFAULT_LANGUAGES,
        cache_dir: str | Path | None = None,
        dpi: int = DPI,
        max_pixels: int = MAX_PIXELS,
        on_page: Callable[[str, int | None, int | None], None] | None = None,
    ) -> None:
        if not isinstance(engine, OcrEngine) and engine not in ("auto", *ENGINES):
            raise InvalidArgumentError(
                f"engine must be auto, {' or '.join(ENGINES)}, got {engine!r}", argument="engine"
            )
        if isinstance(languages, str) or not languages:
            raise InvalidArgumentError(
                "languages must be a non-empty sequence of language names", argument="languages"
            )
        if not MIN_DPI <= dpi <= MAX_DPI:
            raise InvalidArgumentError(
                f"dpi must be from {MIN_DPI} to {MAX_DPI}, got {dpi!r}", argument="dpi"
            )
        if max_pixels < 1_000_000:
            raise InvalidArgumentError(
                f"max_pixels must be at least 1,000,000, got {max_pixels!r}", argument="max_pixels"
            )
        self.choice = engine
        self.languages = tuple(languages)
        self.cache = None if cache_dir is None else OcrCache(cache_dir)
        self.dpi = dpi
        self.max_pixels = max_pixels
        self.on_page = on_page
        """Called with (file name, page, pages) as OCR of a page begins (page None: an
        image); not carried into a parse child."""
        self._engine: OcrEngine | Literal[False] | None = False  # False: not resolved yet
        self._passed_over = ""

    def __repr__(self) -> str:
        return f"Ocr({self.choice!r}, languages={self.languages!r})"

    def __getstate__(self) -> dict[str, Any]:
        # The engine once resolved goes along: a parse child reads with what its parent
        # chose (and sized its memory for), not with what it would find itself.
        state = dict(self.__dict__)
        state["on_page"] = None
        return state

    @property
    def engine(self) -> OcrEngine | None:
        """The engine pages are read with, None when "auto" found none installed; an
        engine named but unusable raises OcrError saying what to install."""
        if self._engine is False:
            self._engine = self._resolve()
        return self._engine

    def summary(self) -> str:
        """One line saying what reads scans and, for "auto", why: e.g. "RapidOCR (auto:
        Tesseract is not installed)", or "none (auto: ...; to read scans, install ...)"."""
        engine = self.engine
        if isinstance(self.choice, OcrEngine) or self.choice != "auto":
            return _label(engine) if engine is not None else "none"
        if engine is None:
            return f"none (auto: {self._passed_over}; {OCR_HINT})"
        if self._passed_over:
            return f"{_label(engine)} (auto: {self._passed_over})"
        return f"{_label(engine)} (auto)"

    def _resolve(self) -> OcrEngine | None:
        if isinstance(self.choice, OcrEngine):
            return self.choice
        if self.choice == "tesseract":
            tesseract = TesseractEngine(self.languages)
            tesseract.check()
            return tesseract
        if self.choice == "rapidocr":
            return _rapidocr(self.languages, required=True)
        missing = missing_languages(self.languages)
        if not missing:
            return TesseractEngine(self.languages)
        if not tesseract_installed():
            why = "Tesseract is not installed"
        else:
            packages = " ".join(tesseract_package(language) for language in missing)
            why = f"Tesseract has no {', '.join(missing)} data (apt install {packages})"
        rapid = _rapidocr(self.languages, required=False)
        if rapid is None:
            unread = sorted(set(self.languages) - RAPID_LANGUAGES)
            if not installed("rapidocr_onnxruntime"):
                why += " and RapidOCR is not installed"
            else:
                why += f"; RapidOCR does not read {', '.join(unread)}"
        self._passed_over = why
        return rapid

    def read(
        self,
        page: PageImage,
        filename: str = "",
        number: int | None = None,
        pages: int | None = None,
    ) -> OcrResult | None:
        """The text on `page` (from the cache when it was read before); None without an
        engine. `filename`, `number` and `pages` say where the page is, for `on_page`."""
        engine = self.engine
        if engine is None:
            return None
        if self.on_page is not None:
            self.on_page(filename, number, pages)
        cache = self.cache
        key = "" if cache is None else cache.key(engine.identity, page)
        if cache is not None and (cached := cache.get(key)) is not None:
            return cached
        address_space.claim_reserve()  # in a parse child: the memory kept for OCR's models
        result = engine.recognize(page)
        if not any(character.isalnum() for character in result.text):  # rules, dots, dashes
            result = OcrResult(text="", confidence=result.confidence)
        if cache is not None:
            cache.put(key, result)
        return result

    def scale_for(self, width: float, height: float) -> float:
        """The factor that brings a `width` × `height` picture within `max_pixels`
        (1.0 when it already is)."""
        area = width * height
        return 1.0 if area <= self.max_pixels else math.sqrt(self.max_pixels / area)


def as_ocr(value: Ocr | str | None) -> Ocr | None:
    """A parser's `ocr` argument as an `Ocr`: None or "off" is none, an engine name or
    "auto" a default `Ocr` with that engine."""
    if value is None or value == "off":
        return None
    if isinstance(value, Ocr):
        return value
    if isinstance(value, str):
        return Ocr(value)  # type: ignore[arg-type]  # checked there
    raise TypeError(f"ocr must be an Ocr, an engine name, 'auto', 'off' or None, not {value!r}")


def ocr_metadata(result: OcrResult) -> dict[str, Any]:
    """What a Section read by OCR says of it: `ocr`, its confidence, and whether that is low."""
    metadata: dict[str, Any] = {"ocr": True, "ocr_confidence": round(result.confidence, 3)}
    if result.confidence < LOW_CONFIDENCE:
        metadata["ocr_low_confidence"] = True
    return metadata


def _label(engine: OcrEngine) -> str:
    return engine.label or engine.name


def _rapidocr(languages: Sequence[str], *, required: bool) -> OcrEngine | None:
    if not installed("rapidocr_onnxruntime"):
        if not required:
            return None
        raise MissingExtraError("ocr", "rapidocr_onnxruntime", "OCR with RapidOCR")
    if not set(languages) <= RAPID_LANGUAGES and not required:
        return None
    return RapidOcrEngine(languages)
