"""BM25 sparse vectors for hybrid search, the same on every Qdrant backend.

Text is tokenized by Qdrant's own BM25 tokenizer (qdrant-edge-py's `Bm25`, multilingual
segmentation so Chinese and Japanese split into words, English stemming and stopwords) and
hashed to term ids. Runs of CJK characters also contribute their overlapping character
bigrams (as Lucene's CJK analyzer does), so a query word still matches when the segmenter cut
the text differently ("熊猫" inside "大熊猫"). Identifiers the tokenizer would cut into
words — command-line flags, paths, dotted names, CamelCase and snake_case names, error codes —
also count as one whole term each beside their parts, so "--strip-components" matches that
flag and not a page with "--strip" and "components" apart. Term weights are the BM25
term-frequency part, computed here with the collection's running average chunk length; the
IDF part is Qdrant's `Modifier.IDF`, computed by the engine over the collection at query time,
so it stays right as documents come and go.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass

import qdrant_edge as edge

from archivist.rag.cjk import CJK_CHARACTERS

SPARSE_VECTOR = "bm25"
"""Name of the sparse vector every hybrid collection has."""

K1 = 1.2
B = 0.75
DEFAULT_AVG_LEN = 100.0
"""Average chunk length (in BM25 tokens) assumed before anything was written."""

_TOKENIZER = edge.TokenizerType.Multilingual
_LANGUAGE = "english"
_COUNTING_K = 1e9
"""With this k and b=0, Qdrant's BM25 weight tf*(k+1)/(tf+k) is the raw term frequency."""


_CJK_RUN = re.compile(f"[{CJK_CHARACTERS}]{{2,}}")


_IDENTIFIER = re.compile(
    r"""
    (?<![\w./~-])
    (?:
        --?[A-Za-z][\w.]*(?:-[\w.]+)*=?                    # --strip-components, -Wall
      | (?:~|\.{1,2})?/[\w.+-]+(?:/[\w.+-]*)+               # /usr/bin/tar, ~/.config/x
      | [\w.+-]+(?:/[\w.+-]+){2,}/?                         # docs/guide/intro.md
      | [A-Za-z_]\w+(?:(?:\.|::|->)[A-Za-z_]\w+)+           # os.path.join, std::vector
      | \w*[A-Za-z]\w*_\w+                                  # snake_case, VALGRIND_X
      | [a-z]{2,}[a-z0-9]*(?:[A-Z][a-z]+[a-z0-9]*)+           # getElementById
      | [A-Z][a-z]{2,}[a-z0-9]*(?:[A-Z][a-z]{2,}[a-z0-9]*)+  # QdrantStore
      | [A-Z]{1,5}\d{3,}                                     # E0425
      | 0x[0-9A-Fa-f]{3,}                                   # 0x80070005
    )
    (?![\w/])
    """,
    re.VERBOSE,
)
_TRAILING = ".,:;!?)]}'\"="


_EDGES = ".,;:!?()[]{}'\"`"
"""Punctuation around a word in prose; stripped only to tell plain words apart quickly."""


def identifiers(text: str) -> list[str]:
    """The tokens of `text` shaped like names in code or on a command line (see the module
    doc), lowercased. Hyphenated words and mixed-case terms of prose ("T-cell", "IL-6",
    "mRNAs") are not: the word tokenizer's parts serve them.

    No identifier spans white space, so the pattern runs on each white-space-separated word
    that could hold one; plain words and numbers (most of any prose) are skipped first."""
    found = []
    for word in text.split():
        if _plain(word.strip(_EDGES)):
            continue
        for match in _IDENTIFIER.finditer(word):
            token = match.group(0).rstrip(_TRAILING)
            if len(token) < 3 or not any(c.isalpha() for c in token):
                continue
            found.append(token.lower())
    return found


def _plain(core: str) -> bool:
    """Whether `core` is a number or a word in one case, or capitalised: no identifier."""
    if core.isdigit():
        return True
    return core.isalpha() and (core.islower() or core.isupper() or core[1:].islower())


def identifier_terms(text: str) -> Counter[int]:
    """Term ids of the whole identifiers in `text` (a namespace of their own)."""
    found: Counter[int] = Counter()
    for token in identifiers(text):
        digest = hashlib.blake2b(f"id:{token}".encode(), digest_size=4)
        found[int.from_bytes(digest.digest(), "big") & 0x7FFFFFFF] += 1
    return found


def cjk_bigrams(text: str) -> Counter[int]:
    """Term ids of the overlapping character bigrams of every CJK run in `text`."""
    found: Counter[int] = Counter()
    for run in _CJK_RUN.findall(text):
        for start in range(len(run) - 1):
            digest = hashlib.blake2b(f"cjk2:{run[start : start + 2]}".encode(), digest_size=4)
            found[int.from_bytes(digest.digest(), "big") & 0x7FFFFFFF] += 1
    return found


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


class Bm25Encoder:
    """Turns chunk texts and query texts into BM25 sparse vectors."""

    def __init__(self) -> None:
        self._counter = edge.Bm25(
            edge.Bm25Config(k=_COUNTING_K, b=0.0, tokenizer=_TOKENIZER, language=_LANGUAGE)
        )
        self._query = edge.Bm25(edge.Bm25Config(tokenizer=_TOKENIZER, language=_LANGUAGE))

    def count(self, text: str) -> TermCounts:
        """Term frequencies of `text`."""
        raw = self._counter.embed_document(text)
        counts: Counter[int] = Counter(
            {
                index: max(1, round(value))
                for index, value in zip(raw.indices, raw.values, strict=True)
            }
        )
        counts.update(cjk_bigrams(text))
        length = sum(counts.values())
        # Whole identifiers are extra terms beside their parts, not extra length: a text's
        # other term weights stay what they would be without them.
        counts.update(identifier_terms(text))
        return TermCounts(dict(counts), length)

    @staticmethod
    def document(terms: TermCounts, avg_len: float) -> SparseVector:
        """BM25 term weights of a chunk of `terms` in a collection of average length `avg_len`."""
        norm = K1 * (1.0 - B + B * terms.length / avg_len)
        indices = sorted(terms.counts)
        values = [terms.counts[i] * (K1 + 1.0) / (terms.counts[i] + norm) for i in indices]
        return SparseVector(indices, values)

    def query(self, text: str) -> SparseVector:
        """A query's terms, each weighted 1 (the engine multiplies in each term's IDF)."""
        terms = (
            set(self._query.embed_query(text).indices)
            | set(cjk_bigrams(text))
            | set(identifier_terms(text))
        )
        ordered = sorted(terms)
        return SparseVector(ordered, [1.0] * len(ordered))

    @staticmethod
    def exact(text: str) -> SparseVector | None:
        """The query's whole identifiers alone, each weighted 1; None when it has none."""
        terms = sorted(set(identifier_terms(text)))
        return SparseVector(terms, [1.0] * len(terms)) if terms else None
