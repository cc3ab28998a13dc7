"""Write the background term table (`archivist/rag/store/core/data/background-terms.bin`).

    .venv/bin/python scripts/gen_background_terms.py        # needs the `bench` extra (wordfreq)

For each BM25 term id (`archivist.rag.store.core.terms`) of the English and Chinese words
wordfreq lists, the share of ordinary chunks of that language expected to hold the term: a
word of token frequency f appears in a chunk of `CHUNK_TERMS` terms with probability
1 - exp(-CHUNK_TERMS * f); a term several words map to (a stem, a bigram inside many words)
sums their frequencies. Terms rarer than `MIN_SHARE` are left out: they weigh as unknown.
"""

from __future__ import annotations

import argparse
import math
import sys
from array import array
from pathlib import Path

import wordfreq

from archivist.rag.store.core.background import CHUNK_TERMS, MAGIC, TABLE
from archivist.rag.store.core.bm25 import Bm25Encoder

LANGUAGES = ("en", "zh")
MIN_SHARE = 1e-4
"""Shares below this change a term's weight by little (a fraction of one pseudo-chunk)."""


def shares() -> dict[int, float]:
    """The background share of every term id of the listed languages' words."""
    encoder = Bm25Encoder()
    frequency: dict[int, float] = {}
    for language in LANGUAGES:
        for word, share in wordfreq.get_frequency_dict(language, "large").items():
            for term in set(encoder.query(word).indices):
                frequency[term] = frequency.get(term, 0.0) + share
    table = {term: -math.expm1(-CHUNK_TERMS * f) for term, f in frequency.items()}
    return {term: share for term, share in table.items() if share >= MIN_SHARE}


def encode(table: dict[int, float]) -> bytes:
    """The table as written: magic, then term ids and their shares, both little-endian."""
    terms = sorted(table)
    ids, values = array("I", terms), array("f", (table[t] for t in terms))
    if ids.itemsize != 4 or values.itemsize != 4:
        raise SystemExit("this platform's array sizes differ from the table's")
    if sys.byteorder == "big":
        ids.byteswap()
        values.byteswap()
    return MAGIC + len(terms).to_bytes(4, "little") + ids.tobytes() + values.tobytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=TABLE)
    args = parser.parse_args()
    table = shares()
    args.out.write_bytes(encode(table))
    print(f"{len(table)} terms -> {args.out} ({args.out.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
