"""`TesseractEngine`: the `tesseract` command (Debian's `tesseract-ocr`), page by page.

The command is called directly rather than through a wrapper package: one call per page
with the page on stdin and TSV on stdout needs no temporary files, and a per-page timeout
bounds a stuck page.
"""

from __future__ import annotations

import csv
import functools
import io
import shutil
import subprocess
from collections.abc import Sequence

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

PAGE_SECONDS = 300.0
"""Longest one page may take before its OCR fails."""

MIN_LINE_CONFIDENCE = 0.5
"""Lines read with less mean confidence are left out: they are mostly line art and noise
taken for letters (RapidOCR drops such boxes itself). Single words are not judged alone: a
blurred Chinese character is often right at a confidence of 0.15."""


class TesseractEngine(OcrEngine):
    """Tesseract 4+ with its LSTM models; `languages` by Tesseract's names ("eng",
    "chi_sim", "deu", ...), each needing its traineddata installed (Debian:
    `tesseract-ocr-LANG`). `binary` is the command's name or path."""

    name = "tesseract"
    label = "Tesseract"

    def __init__(
        self, languages: Sequence[str] = DEFAULT_LANGUAGES, *, binary: str = "tesseract"
    ) -> None:
        if isinstance(languages, str) or not languages:
            raise ValueError("languages must be a non-empty sequence of language names")
        self.languages = tuple(languages)
        self.binary = binary

    def __repr__(self) -> str:
        return f"TesseractEngine(languages={self.languages!r})"

    @property
    def identity(self) -> str:
        languages = "+".join(self.languages)
        return f"tesseract {tesseract_version(self.binary)} {languages} {MIN_LINE_CONFIDENCE}"

    def check(self) -> None:
        """Raise OcrError naming what to install if the command or a language is missing."""
        if not tesseract_installed(self.binary):
            packages = " ".join(tesseract_package(lang) for lang in self.languages)
            raise OcrError(
                f"the {self.binary} command is not installed "
                f"(Debian/Ubuntu: apt install tesseract-ocr {packages})"
            )
        missing = missing_languages(self.languages, self.binary)
        if missing:
            packages = " ".join(tesseract_package(lang) for lang in missing)
            raise OcrError(
                f"Tesseract has no {', '.join(missing)} language data "
                f"(Debian/Ubuntu: apt install {packages})"
            )

    def recognize(self, page: PageImage) -> OcrResult:
        self.check()
        command = [self.binary, "stdin", "stdout", "-l", "+".join(self.languages), "tsv"]
        try:
            done = subprocess.run(
                command, input=page.pgm(), capture_output=True, timeout=PAGE_SECONDS, check=False
            )
        except subprocess.TimeoutExpired:
            raise OcrError(f"Tesseract took longer than {PAGE_SECONDS:g} s") from None
        except OSError as exc:
            raise OcrError(f"Tesseract could not run: {exc}") from exc
        if done.returncode != 0:
            words = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise OcrError(f"Tesseract failed: {words[-1] if words else done.returncode}")
        return read_tsv(done.stdout.decode("utf-8", "replace"))


def tesseract_package(language: str) -> str:
    """Debian's package of a Tesseract language's data ("chi_sim" → tesseract-ocr-chi-sim)."""
    return "tesseract-ocr-" + language.replace("_", "-").lower()


def read_tsv(tsv: str) -> OcrResult:
    """The text and confidence of Tesseract's TSV output (see `page_text`), without the lines
    below `MIN_LINE_CONFIDENCE`."""
    lines: dict[tuple[int, int, int], list[tuple[str, float, int, int]]] = {}
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        word = (row.get("text") or "").strip()
        if row.get("level") != "5" or not word:
            continue
        key = (int(row["block_num"]), int(row["par_num"]), int(row["line_num"]))
        top = int(row["top"])
        confidence = max(0.0, float(row["conf"])) / 100
        lines.setdefault(key, []).append((word, confidence, top, top + int(row["height"])))
    found: list[Line] = []
    pieces: list[tuple[str, float]] = []
    for words in lines.values():
        read = [(word, confidence) for word, confidence, _, _ in words]
        if weighted_confidence(read) < MIN_LINE_CONFIDENCE:
            continue
        text = " ".join(word for word, _ in read)
        found.append(Line(text, min(w[2] for w in words), max(w[3] for w in words)))
        pieces.extend(read)
    return OcrResult(text=page_text(found), confidence=weighted_confidence(pieces))


def tesseract_installed(binary: str = "tesseract") -> bool:
    """Whether the `tesseract` command can be found."""
    return shutil.which(binary) is not None


@functools.cache
def tesseract_version(binary: str = "tesseract") -> str:
    """The command's version ("5.3.0"), or "" if it does not run."""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    first = done.stdout.decode("utf-8", "replace").split("\n", 1)[0].split()
    return first[1] if len(first) > 1 else ""


@functools.cache
def installed_languages(binary: str = "tesseract") -> frozenset[str]:
    """The languages whose data this Tesseract has (`tesseract --list-langs`); none if it
    does not run."""
    try:
        done = subprocess.run(
            [binary, "--list-langs"], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    if done.returncode != 0:
        return frozenset()
    listed = done.stdout.decode("utf-8", "replace").splitlines()[1:]  # after the heading
    return frozenset(line.strip() for line in listed if line.strip())


def missing_languages(languages: Sequence[str], binary: str = "tesseract") -> list[str]:
    """The languages of `languages` this Tesseract cannot read; all of them if the command
    is not installed."""
    have = installed_languages(binary) if tesseract_installed(binary) else frozenset()
    return [lang for lang in languages if lang not in have]
