"""`OcrEngine`: what every OCR engine does (a grayscale page in, its text and confidence out)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass

from archivist.rag.cjk import UNSPACED_CHARACTERS
from archivist.rag.parser.ocr.choices import DEFAULT_LANGUAGES as DEFAULT_LANGUAGES

LOW_CONFIDENCE = 0.6
"""Below this mean recognition confidence a page's text is marked `ocr_low_confidence`."""


@dataclass(frozen=True)
class PageImage:
    """An 8-bit grayscale picture of a page: `pixels` holds `width` × `height` bytes, row by
    row (no padding)."""

    width: int
    height: int
    pixels: bytes

    def __post_init__(self) -> None:
        if self.width <= 0 or self.height <= 0 or len(self.pixels) != self.width * self.height:
            raise ValueError(f"a {self.width}x{self.height} page needs width*height pixel bytes")

    def pgm(self) -> bytes:
        """The picture as a binary PGM file, which every engine reads without decoding work."""
        return b"P5\n%d %d\n255\n" % (self.width, self.height) + self.pixels


@dataclass(frozen=True)
class OcrResult:
    """The text an engine read (lines joined by newlines, paragraphs by a blank line) and its
    mean confidence from 0 to 1, each character weighing the same; 1.0 when nothing was read."""

    text: str
    confidence: float


class OcrEngine(ABC):
    """One OCR engine. Engines pickle (a parser holding one crosses into a parse child)
    and load their models on first use."""

    name: str
    """The engine's name, as `--ocr` takes it."""
    label: str = ""
    """The engine's name as people write it ("Tesseract"); `name` when empty."""
    memory_mb: int = 0
    """Address space (MiB) the engine's models take in the process that reads with it, on
    top of what parsing takes; a parse child's memory limit grows by it once OCR starts."""

    @property
    @abstractmethod
    def identity(self) -> str:
        """What decides the engine's output (engine, version, languages, settings): cached
        results are kept per identity."""

    @abstractmethod
    def recognize(self, page: PageImage) -> OcrResult:
        """The text on `page` (blocking: callers run it in a worker thread or a child)."""


_SPACE_BETWEEN_CJK = re.compile(f"(?<=[{UNSPACED_CHARACTERS}]) +(?=[{UNSPACED_CHARACTERS}])")


def join_cjk(line: str) -> str:
    """`line` without the spaces an engine put between two Chinese or Japanese characters
    (written without them: a space would split the words BM25 counts); Korean keeps its."""
    return _SPACE_BETWEEN_CJK.sub("", line)


@dataclass(frozen=True)
class Line:
    """One line an engine read: its text and where it lies (pixel rows, top down)."""

    text: str
    top: float
    bottom: float


PARAGRAPH_GAP = 1.0
"""A gap above a line taller than this many times the line's height starts a paragraph (as
does a line above the previous one: the next column). A line beside the previous one (its
middle within the previous one's rows: the next box of a diagram) goes on in its paragraph."""


def page_text(lines: list[Line]) -> str:
    """Lines in reading order as text: a paragraph's lines on one line (their breaks were the
    page's, not the text's), a blank line between paragraphs, no spaces between CJK
    characters."""
    paragraphs: list[list[str]] = []
    previous: Line | None = None
    for line in lines:
        words = line.text.strip()
        if not words:
            continue
        height = max(line.bottom - line.top, 1.0)
        gap = 0.0 if previous is None else line.top - previous.bottom
        beside = previous is not None and (
            previous.top <= (line.top + line.bottom) / 2 <= previous.bottom
        )
        if previous is None or (not beside and (gap > PARAGRAPH_GAP * height or gap < -height)):
            paragraphs.append([])
        paragraphs[-1].append(words)
        previous = line
    return "\n\n".join(join_cjk(" ".join(found)) for found in paragraphs)


def weighted_confidence(pieces: list[tuple[str, float]]) -> float:
    """Mean of the pieces' confidences (0..1), each weighted by its length in characters."""
    total = sum(len(text) for text, _ in pieces)
    if not total:
        return 1.0
    return sum(len(text) * confidence for text, confidence in pieces) / total


class OcrError(ValueError):
    """An engine could not read a page (it failed, timed out, or is missing a language);
    the parser names the file and page."""
