"""BM25 sparse vectors for hybrid search, the same in every store.

A text's terms come from `archivist.rag.store.core.terms`. A chunk's vector holds the BM25
term-frequency part of each term's weight, computed here with the collection's running
average chunk length; the IDF part comes from the collection at query time (Qdrant's
`Modifier.IDF`, or PostgreSQL's document-frequency table), so it stays right as documents
come and go. A query's vector weighs each of its terms 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from archivist.errors import InvalidArgumentError
from archivist.rag.store.core.term_counting import shared_counter, word_bm25
from archivist.rag.store.core.terms import (
    TERM_LAYOUT,
    TERM_LAYOUTS,
    cjk_bigrams,
    identifier_terms,
    number_terms,
)

K1 = 1.2
B = 0.75
DEFAULT_AVG_LEN = 100.0
"""Average chunk length (in BM25 tokens) assumed before anything was written."""


@dataclass(frozen=True)
class SparseVector:
    """Term ids and their weights."""

    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class TermCounts:
    """How often each term id occurs in a text, and the text's length in terms."""

    counts: dict[int, int]
    length: int


@dataclass
class Bm25Stats:
    """Running totals over a collection's chunks, for the average chunk length."""

    tokens: int = 0
    chunks: int = 0

    def average_after(self, batch: list[TermCounts]) -> float:
        """The average length once `batch` is counted too (so a first write uses its own)."""
        tokens = self.tokens + sum(item.length for item in batch)
        chunks = self.chunks + len(batch)
        return tokens / chunks if chunks and tokens else DEFAULT_AVG_LEN

    def add(self, batch: list[TermCounts]) -> None:
        """Count `batch` in."""
        self.tokens += sum(item.length for item in batch)
        self.chunks += len(batch)

    def remove(self, lengths: list[int]) -> None:
        """Count out the chunks of these term `lengths` that were deleted (those of length 0
        had no BM25 vector and were never counted): the totals stay those of the chunks
        stored."""
        gone = [length for length in lengths if length > 0]
        self.tokens = max(0, self.tokens - sum(gone))
        self.chunks = max(0, self.chunks - len(gone))


def check_term_layout(layout: object) -> int:
    """`layout` if this version knows it; ValueError naming it otherwise."""
    if isinstance(layout, bool) or layout not in TERM_LAYOUTS:
        raise InvalidArgumentError(
            f"term layout {layout!r} is not one of {', '.join(map(str, TERM_LAYOUTS))}: "
            "the collection was written by a newer Archivist",
            argument="term_layout",
        )
    return int(layout)


class Bm25Encoder:
    """Turns chunk texts and query texts into BM25 sparse vectors by the rules of one term
    layout (`TERM_LAYOUT` unless a collection was indexed with an older one)."""

    def __init__(self, layout: int = TERM_LAYOUT) -> None:
        self.layout = check_term_layout(layout)
        self.counter = shared_counter()
        """Counts chunk texts' terms (the process's shared counter, which remembers pieces)."""
        self._query = word_bm25()

    def count(self, text: str) -> TermCounts:
        """Term frequencies of `text`."""
        counts, length = self.counter.count(text, numbers=self.layout >= 2)
        if self.layout >= 2:
            # A chunk of numbers or identifiers alone ("404") is one token long, not empty:
            # it gets a BM25 vector like any other text.
            length = max(length, 1 if counts else 0)
        return TermCounts(dict(counts), length)

    @staticmethod
    def document(terms: TermCounts, avg_len: float) -> SparseVector:
        """BM25 term weights of a chunk of `terms` in a collection of average length `avg_len`."""
        norm = K1 * (1.0 - B + B * terms.length / avg_len)
        indices = sorted(terms.counts)
        values = [terms.counts[i] * (K1 + 1.0) / (terms.counts[i] + norm) for i in indices]
        return SparseVector(indices, values)

    def query(self, text: str) -> SparseVector:
        """A query's terms, each weighted 1 (the store multiplies in each term's IDF)."""
        terms = (
            set(self._query.embed_query(text).indices)
            | set(cjk_bigrams(text))
            | set(identifier_terms(text))
        )
        if self.layout >= 2:
            terms |= set(number_terms(text))
        ordered = sorted(terms)
        return SparseVector(ordered, [1.0] * len(ordered))
