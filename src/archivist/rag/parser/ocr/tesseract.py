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
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from numpy import bool_
    from numpy.typing import NDArray

PAGE_SECONDS = 300.0
"""Longest one page may take before its OCR fails."""

MIN_LINE_CONFIDENCE = 0.5
"""Lines read with less mean confidence are left out: they are mostly line art and noise
taken for letters (RapidOCR drops such boxes itself). Single words are not judged alone: a
blurred Chinese character is often right at a confidence of 0.15."""

SPARSE_READ = "sparse-retry 1"
"""How a picture where Tesseract found no text is read again (`sparse_picture`, `--psm 11`):
part of the engine's identity, so results cached before a change of it are read again."""

DARK = 160
"""Gray levels below this are ink in the second read (anti-aliased letters included, the
light fill of a box not)."""

SPARSE_INK = 0.05
"""Most of a picture's area that ink (without ruling lines) may cover for the second read: a
few words on a background cover far less (the shipped pipeline diagram: 0.2%), while a
photo, a texture or a drawing covers more and would be read as letters that are not there."""

SMALL_PICTURE = 1_000_000
"""Pictures of at most this many pixels (screenshots, diagrams: screen resolution, where
letters are a few pixels high) are read the second time at twice their size."""


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
        version = tesseract_version(self.binary)
        return f"tesseract {version} {languages} {MIN_LINE_CONFIDENCE} {SPARSE_READ}"

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
        """The text on `page`; where Tesseract's page layout finds none, a second read of the
        page as sparse text without its ruling lines (`sparse_picture`): small words in the
        boxes of a diagram or a screenshot are lost among the boxes' borders otherwise."""
        self.check()
        result = self._read(page, [])
        if result.text.strip():
            return result
        sparse = sparse_picture(page)
        return result if sparse is None else self._read(sparse, ["--psm", "11"], sparse=True)

    def _read(self, page: PageImage, options: list[str], *, sparse: bool = False) -> OcrResult:
        command = [self.binary, "stdin", "stdout", "-l", "+".join(self.languages), *options]
        command.append("tsv")
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
        return read_tsv(done.stdout.decode("utf-8", "replace"), sparse=sparse)


def tesseract_package(language: str) -> str:
    """Debian's package of a Tesseract language's data ("chi_sim" → tesseract-ocr-chi-sim)."""
    return "tesseract-ocr-" + language.replace("_", "-").lower()


_Kept = tuple[Line, int, list[tuple[str, float]]]
"""A line kept from Tesseract's output: the line, its left edge, its words and confidences."""


def read_tsv(tsv: str, *, sparse: bool = False) -> OcrResult:
    """The text and confidence of Tesseract's TSV output (see `page_text`), without the lines
    below `MIN_LINE_CONFIDENCE`. `sparse` (output of `--psm 11`, which reads words in no
    particular order): lines beside each other are one row, read left to right, rows top down."""
    lines: dict[tuple[int, int, int], list[tuple[str, float, int, int, int]]] = {}
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        word = (row.get("text") or "").strip()
        if row.get("level") != "5" or not word:
            continue
        key = (int(row["block_num"]), int(row["par_num"]), int(row["line_num"]))
        top, left = int(row["top"]), int(row["left"])
        confidence = max(0.0, float(row["conf"])) / 100
        lines.setdefault(key, []).append((word, confidence, top, top + int(row["height"]), left))
    kept: list[_Kept] = []
    for words in lines.values():
        read = [(word, confidence) for word, confidence, _, _, _ in words]
        if weighted_confidence(read) < MIN_LINE_CONFIDENCE:
            continue
        text = " ".join(word for word, _ in read)
        line = Line(text, min(w[2] for w in words), max(w[3] for w in words))
        kept.append((line, min(w[4] for w in words), read))
    found = _rows(kept) if sparse else [line for line, _, _ in kept]
    pieces = [piece for _, _, read in kept for piece in read]
    return OcrResult(text=page_text(found), confidence=weighted_confidence(pieces))


def _rows(kept: list[_Kept]) -> list[Line]:
    """Lines read in no particular order as rows, top down: a line whose middle lies within a
    row's first line joins that row, and a row's lines are one line, left to right."""
    rows: list[list[_Kept]] = []
    for entry in sorted(kept, key=lambda entry: entry[0].top):
        middle = (entry[0].top + entry[0].bottom) / 2
        if rows and rows[-1][0][0].top <= middle <= rows[-1][0][0].bottom:
            rows[-1].append(entry)
        else:
            rows.append([entry])
    return [
        Line(
            " ".join(line.text for line, _, _ in sorted(row, key=lambda entry: entry[1])),
            min(line.top for line, _, _ in row),
            max(line.bottom for line, _, _ in row),
        )
        for row in rows
    ]


def sparse_picture(page: PageImage) -> PageImage | None:
    """`page` for a second read: ink (below `DARK`) in black on white, without its ruling
    lines (runs of ink at least a quarter of the picture's shorter side long, across or down:
    borders of boxes, connectors, table rules; no letter's stroke is that long in a picture
    of text), at twice its size when it has at most `SMALL_PICTURE` pixels. None when what is
    left is not sparse text: no ink, or more than `SPARSE_INK` of the picture."""
    import numpy as np  # here: a parse child that reads no scan never maps numpy's libraries

    ink = np.frombuffer(page.pixels, dtype=np.uint8).reshape(page.height, page.width) < DARK
    if page.width * page.height <= SMALL_PICTURE:
        ink = ink.repeat(2, axis=0).repeat(2, axis=1)
    longest = max(2, min(ink.shape) // 4)
    ink &= ~(_long_runs(ink, longest) | _long_runs(ink.T, longest).T)
    if not 0 < ink.mean() <= SPARSE_INK:
        return None
    height, width = ink.shape
    return PageImage(width, height, np.where(ink, 0, 255).astype(np.uint8).tobytes())


def _long_runs(ink: NDArray[bool_], length: int) -> NDArray[bool_]:
    """The pixels of `ink` in runs of at least `length` along its rows."""
    import numpy as np

    height, width = ink.shape
    padded = np.zeros((height, width + 2), dtype=np.int8)
    padded[:, 1:-1] = ink
    steps = np.diff(padded, axis=1)
    rows, starts = np.nonzero(steps == 1)  # row-major: the n-th start and end are one run
    _, ends = np.nonzero(steps == -1)
    long = ends - starts >= length
    edges = np.zeros((height, width + 1), dtype=np.int32)
    np.add.at(edges, (rows[long], starts[long]), 1)
    np.add.at(edges, (rows[long], ends[long]), -1)
    return np.cumsum(edges, axis=1)[:, :width] > 0


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
