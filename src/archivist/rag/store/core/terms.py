"""Which terms a text holds for BM25: the one rule every store's sparse side uses.

A text's terms, each hashed to a 31-bit id:

- **words**: Qdrant's BM25 tokenizer (multilingual segmentation, so Chinese and Japanese split
  into words; English stemming and stop words). It keeps words with digits ("sha256",
  "E0425") but drops bare numbers and cuts versions and dates apart ("v2.0.11" is "v2");
- **CJK bigrams**: the overlapping character bigrams of every run of CJK characters (as
  Lucene's CJK analyzer does), so a query word still matches where the segmenter cut the text
  differently ("熊猫" inside "大熊猫");
- **identifiers**: tokens shaped like names in code or on a command line (flags, paths, dotted,
  CamelCase and snake_case names, error codes), each also as one whole term beside its parts,
  so "--strip-components" matches that flag and not a page with "--strip" and "components";
- **numbers** (term layout 2 on): every decimal number, with its decimal or version points
  ("404", "8731", "3.14", "2.0.11"; "1,299.99" as "1299.99"; full-width digits as ASCII),
  the digits inside words ("RFC9457" holds 9457, "python3" holds 3), and every token that
  joins a number to more by `.` `,` `:` `/` `+` `-` as one whole term ("v2.0.11",
  "2026-12-04", "127.0.0.1:8080"), so "port 8731" finds the note about port 8731.

Identifiers and numbers are extra terms, not extra length: a text's other term weights stay
what the words and bigrams make them. A collection records the term layout it was indexed
with (`TERM_LAYOUT` for new ones) and is written and searched with that layout's rules, so
old and new terms never mix in one collection.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter

from archivist.rag.cjk import CJK_CHARACTERS

TERM_LAYOUT = 2
"""The term layout of new collections: 1 = words, CJK bigrams and identifiers; 2 = numbers too."""
TERM_LAYOUTS = (1, 2)
"""Every layout this version reads and writes."""


def term_id(namespace: str, token: str) -> int:
    """The 31-bit id of `token` in `namespace` (one namespace per kind of extra term)."""
    digest = hashlib.blake2b(f"{namespace}:{token}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


# CJK bigrams

_CJK_RUN = re.compile(f"[{CJK_CHARACTERS}]{{2,}}")


def cjk_bigrams(text: str) -> Counter[int]:
    """Term ids of the overlapping character bigrams of every CJK run in `text`."""
    found: Counter[int] = Counter()
    for run in _CJK_RUN.findall(text):
        for start in range(len(run) - 1):
            found[term_id("cjk2", run[start : start + 2])] += 1
    return found


# Identifiers

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
    """The tokens of `text` shaped like names in code or on a command line, lowercased.
    Hyphenated words and mixed-case terms of prose ("T-cell", "IL-6", "mRNAs") are not: the
    word tokenizer's parts serve them.

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
    """Term ids of the whole identifiers in `text`."""
    return Counter(term_id("id", token) for token in identifiers(text))


# Numbers

_WITH_DIGIT = re.compile(r"(?<!\S)[^\s\d]*\d\S*")
"""A white-space-separated word holding a digit (it starts only after white space, so the
scan stays linear in the text)."""
_TOKEN = re.compile(r"\w+(?:[.,:/+-]\w+)*")
"""Word characters joined by the separators numbers are written with."""
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|\d+(?:\.\d+)*")
"""A number: with thousands separators, or digits with decimal or version points."""
_SEPARATORS = frozenset(".,:/+-")
_HEX = re.compile(r"0[xX][0-9A-Fa-f]+")


def numbers(text: str) -> list[str]:
    """The number terms of `text` (see the module doc), each occurrence once, in order."""
    found: list[str] = []
    for word in _WITH_DIGIT.findall(text):
        for match in _TOKEN.finditer(word):
            token = match.group(0)
            if not any(c.isdecimal() for c in token) or _HEX.fullmatch(token):
                continue  # a hex literal (0x80070005) is an identifier, not a number
            parts = [_ascii_digits(m.group(0)).replace(",", "") for m in _NUMBER.finditer(token)]
            found.extend(dict.fromkeys(parts))
            if _SEPARATORS.intersection(token):
                whole = _ascii_digits(token).lower()
                if _NUMBER.fullmatch(whole):
                    whole = whole.replace(",", "")
                if whole not in parts:
                    found.append(whole)
    return found


def _ascii_digits(token: str) -> str:
    """`token` with every decimal digit (full-width, Arabic-Indic, ...) written in ASCII."""
    if token.isascii():
        return token
    return "".join(str(unicodedata.digit(c)) if c.isdecimal() else c for c in token)


def exact_lookup(text: str) -> bool:
    """Whether `text` names only identifiers and numbers ("E0499", "--strip-components",
    "8731 8732"), no word of prose: a lookup of exact tokens, which an embedding model reads
    as noise. Words in any script count as prose ("RUSTDOCFLAGS", "pandas", "熊猫")."""
    words = [word.strip(_EDGES) for word in text.split()]
    words = [word for word in words if word]
    if not words:
        return False
    return all(
        any(c.isdecimal() for c in word) or identifiers(word) == [word.lower()] for word in words
    )


def number_terms(text: str) -> Counter[int]:
    """Term ids of the number terms of `text`."""
    return Counter(term_id("num", token) for token in numbers(text))
