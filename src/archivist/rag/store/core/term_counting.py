"""A chunk's BM25 term counts, worked out one white-space-separated piece at a time and
remembered, so counting a chunk costs a lookup per piece rather than a tokenizer pass.

Every rule of `archivist.rag.store.core.terms` is local to a piece: no CJK run, identifier or
number spans white space. Qdrant's word tokenizer is local to a piece too in text written
only in the Latin blocks (printable characters below U+0250 and general punctuation, with
no white space but spaces, tabs and line breaks), but not in other scripts: it picks a
segmenter from a whole run of one script and attaches digits to the script before them, so
Japanese kanji read alone are segmented as Chinese, and "IL-1β" is not "IL-" and "1β". A
text holding any other character is counted whole. Either way the counts are exactly those
of counting the whole text at once (`tests/store/test_term_counting.py` compares them on
varied and random texts).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING, NamedTuple

from archivist.rag.store.core.terms import cjk_bigrams, identifier_terms, number_terms

if TYPE_CHECKING:
    import qdrant_edge

MAX_PIECES = 200_000
"""About how many pieces are remembered (some tens of MiB): the most recently used."""

_OTHER_SCRIPT = re.compile("[^\t\n\r -~\u00a1-\u024f\u2010-\u2027\u2030-\u205e]")
"""A character outside those where the word tokenizer is local to a piece: other scripts,
and control, format and space characters that `str.split` and the tokenizer part text at
differently (a no-break space, for one)."""

_COUNTING_K = 1e9
"""With this k and b=0, Qdrant's BM25 weight tf*(k+1)/(tf+k) is the raw term frequency."""


def word_bm25(k: float | None = None, b: float | None = None) -> qdrant_edge.Bm25:
    """Qdrant's BM25 (its own `k` and `b` unless given) over the multilingual word tokenizer
    with English stemming and stop words, the same for chunks and queries. Qdrant Edge is
    imported here, on first use, so importing a store loads no Qdrant module it does not use."""
    import qdrant_edge as edge

    tokenizer = edge.TokenizerType.Multilingual
    return edge.Bm25(edge.Bm25Config(k=k, b=b, tokenizer=tokenizer, language="english"))


def word_counter() -> qdrant_edge.Bm25:
    """Qdrant's BM25 set up to give raw term frequencies of the tokenizer's words."""
    return word_bm25(k=_COUNTING_K, b=0.0)


class Piece(NamedTuple):
    """What one piece of Latin-script text adds to a text's counts, each term id repeated as
    often as it occurs. Its words make the text's BM25 length; identifiers and numbers are
    counted beside them (such a piece holds no CJK bigrams)."""

    terms: tuple[int, ...]
    """Words, identifiers and numbers."""
    terms_without_numbers: tuple[int, ...]
    """Words and identifiers."""
    length: int
    """How many words."""


class TermCounter:
    """Counts texts' terms, remembering pieces between calls.

    A piece is remembered the second time it is seen (most pieces seen once, such as
    numbers, are counted together with the text's other new pieces in one pass instead), and
    about `max_pieces` are kept, the most recently used: when the newer half fills up, the
    older half is dropped. Threads may share it: a piece two of them learn at once is only
    remembered twice, and what is remembered never changes a count."""

    def __init__(self, max_pieces: int = MAX_PIECES) -> None:
        self.max_pieces = max_pieces
        self._words = word_counter()
        self._newer: dict[str, Piece] = {}
        self._older: dict[str, Piece] = {}
        self._seen: set[str] = set()

    def words(self, text: str) -> Counter[int]:
        """The word terms of `text` as the tokenizer finds them in the whole text."""
        raw = self._words.embed_document(text)
        pairs = zip(raw.indices, raw.values, strict=True)
        return Counter({index: max(1, round(value)) for index, value in pairs})

    def count(self, text: str, *, numbers: bool) -> tuple[Counter[int], int]:
        """The term counts of `text` and its length: the number of its words and CJK bigrams
        (identifiers and, with `numbers`, number terms are counted but add no length)."""
        if _OTHER_SCRIPT.search(text):
            return self._count_whole(text, numbers)
        pieces = text.split()
        found: list[Piece | None] = list(map(self._newer.get, pieces))
        new: list[str] = []
        if None in found:
            pairs = zip(found, pieces, strict=True)
            found = [entry or self._find(piece, new) for entry, piece in pairs]
        known = [entry for entry in found if entry is not None]
        counts = Counter(chain.from_iterable(map(_TERMS[numbers], known)))
        length = sum(map(_LENGTH, known))
        if new:
            together = " ".join(new)
            words = self.words(together)
            length += words.total()
            counts.update(words)
            counts.update(_beside_words(together, numbers))
        return counts, length

    def _count_whole(self, text: str, numbers: bool) -> tuple[Counter[int], int]:
        """A text in other scripts: its words are counted in the whole text."""
        counts = self.words(text)
        bigrams = cjk_bigrams(text)
        counts.update(bigrams)
        length = counts.total()
        counts.update(_beside_words(text, numbers))
        return counts, length

    def _find(self, piece: str, new: list[str]) -> Piece | None:
        """`piece`'s terms if it was seen before (remembering them); otherwise None, with the
        piece added to `new`."""
        entry = self._older.get(piece)
        if entry is None:
            if piece not in self._seen:
                if len(self._seen) >= self.max_pieces:
                    self._seen.clear()
                self._seen.add(piece)
                new.append(piece)
                return None
            entry = self._learn(piece)
        if len(self._newer) >= self.max_pieces // 2:
            self._older = self._newer
            self._newer = {}
        self._newer[piece] = entry
        return entry

    def _learn(self, piece: str) -> Piece:
        words = tuple(self.words(piece).elements())
        names = tuple(identifier_terms(piece).elements())
        numbered = tuple(number_terms(piece).elements())
        without_numbers = words + names
        return Piece(
            without_numbers + numbered if numbered else without_numbers,
            without_numbers,
            len(words),
        )


def _beside_words(text: str, numbers: bool) -> Counter[int]:
    """The identifier terms of `text`, and with `numbers` its number terms."""
    terms = identifier_terms(text)
    if numbers:
        terms.update(number_terms(text))
    return terms


_TERMS = {True: attrgetter("terms"), False: attrgetter("terms_without_numbers")}
_LENGTH = attrgetter("length")


@functools.cache
def shared_counter() -> TermCounter:
    """The process's one counter, made on first use: every encoder shares what it learns."""
    return TermCounter()
