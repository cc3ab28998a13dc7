"""How much a query term weighs in the lexical evidence: its IDF, with the language's
background share of chunks holding it counted in as `BACKGROUND_CHUNKS` more chunks.

A collection's own document frequencies say little while it is small: in five documents
every word is rare or everywhere, and a passage's relevance would move as documents come and
go. So each term's document share is estimated as if the collection held `BACKGROUND_CHUNKS`
ordinary chunks of the language besides its own (the share of such chunks holding the term
comes from a word-frequency table shipped in `data/`): in a small collection a word weighs as
the language weighs it, in a large one as the collection does. Terms the table does not
know (names, numbers, words of other languages, CJK bigrams across two words) count as held
by none of those chunks.
"""

from __future__ import annotations

import math
import sys
from array import array
from bisect import bisect_left
from functools import cache
from pathlib import Path

TABLE = Path(__file__).with_name("data") / "background-terms.bin"
"""Term ids and background shares (written by `scripts/gen_background_terms.py`)."""
MAGIC = b"ARCHBG1\n"
CHUNK_TERMS = 100.0
"""Terms in an ordinary chunk, for the chance that a chunk holds a word of a given frequency."""
BACKGROUND_CHUNKS = 1000.0
"""How many chunks the language's background counts as beside a collection's own."""


@cache
def _table() -> tuple[array[int], array[float]]:
    """The shipped table as two arrays (term ids ascending, their shares): a megabyte,
    where a dict of the same would take several."""
    data = TABLE.read_bytes()
    if not data.startswith(MAGIC):
        raise ValueError(f"{TABLE} is not a background term table")
    count = int.from_bytes(data[len(MAGIC) : len(MAGIC) + 4], "little")
    start = len(MAGIC) + 4
    ids, shares = array("I"), array("f")
    ids.frombytes(data[start : start + 4 * count])
    shares.frombytes(data[start + 4 * count : start + 8 * count])
    if sys.byteorder == "big":  # the file is little-endian
        ids.byteswap()
        shares.byteswap()
    return ids, shares


def background_share(term: int) -> float:
    """The share of ordinary chunks of the language that hold `term` (0 if unknown)."""
    ids, shares = _table()
    at = bisect_left(ids, term)
    return shares[at] if at < len(ids) and ids[at] == term else 0.0


def background_shares() -> dict[int, float]:
    """The whole table, by term id."""
    return dict(zip(*_table(), strict=True))


def term_weight(term: int, held_by: int, chunks: int) -> float:
    """The IDF of `term` held by `held_by` of a collection's `chunks` chunks with terms, the
    background counted in (BM25's IDF over both)."""
    total = max(chunks, 0) + BACKGROUND_CHUNKS
    held = max(held_by, 0) + BACKGROUND_CHUNKS * background_share(term)
    return math.log(1.0 + (total - held + 0.5) / (held + 0.5))
