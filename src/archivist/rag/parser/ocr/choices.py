"""The OCR choices as plain values: `Ocr`, the service's settings and the CLI's options are
built on them, and `--help` shows them without loading an engine."""

from __future__ import annotations

from typing import Literal, get_args

EngineName = Literal["tesseract", "rapidocr"]
OcrChoice = Literal["auto", "off", EngineName]
"""What a setting may ask for: "auto" (the first engine installed), "off", or an engine."""
ENGINES: tuple[str, ...] = get_args(EngineName)
"""The engines `Ocr` knows by name."""
OCR_CHOICES: tuple[str, ...] = get_args(OcrChoice)
DEFAULT_OCR: OcrChoice = "auto"

DEFAULT_LANGUAGES: tuple[str, ...] = ("eng", "chi_sim")
"""English and Simplified Chinese, by Tesseract's language names."""
LANGUAGE_PATTERN = r"[A-Za-z_]{2,32}"
"""One language name, by Tesseract's names (`chi_sim`)."""
MAX_LANGUAGES = 16
LANGUAGES_PATTERN = rf"{LANGUAGE_PATTERN}(\+{LANGUAGE_PATTERN}){{0,{MAX_LANGUAGES - 1}}}"
"""Language names joined with + (`eng+chi_sim`), as an option gives them."""

DPI = 200
"""Resolution PDF pages are rendered at for OCR."""
MIN_DPI = 36
MAX_DPI = 600
