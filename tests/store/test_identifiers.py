"""Which tokens count as whole identifiers in the BM25 vectors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archivist.rag.store.core.bm25 import Bm25Encoder
from archivist.rag.store.core.terms import _IDENTIFIER, _TRAILING, identifier_terms, identifiers


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("what does --strip-components do?", ["--strip-components"]),
        ("-Wall and --track-origins=yes", ["-wall", "--track-origins"]),
        ("os.path.join() and std::vector", ["os.path.join", "std::vector"]),
        ("QdrantStore, getElementById", ["qdrantstore", "getelementbyid"]),
        ("max_per_document, E0425, 0x80070005", ["max_per_document", "e0425", "0x80070005"]),
        (
            "see /usr/share/doc/tar/ and ~/.config/x.conf",
            ["/usr/share/doc/tar/", "~/.config/x.conf"],
        ),
        (
            "call xsltApplyStylesheet or VALGRIND_MAKE_MEM_DEFINED",
            ["xsltapplystylesheet", "valgrind_make_mem_defined"],
        ),
    ],
)
def test_identifiers_are_found_whole(text: str, found: list[str]) -> None:
    assert identifiers(text) == found


@pytest.mark.parametrize(
    "text",
    ["The cat sat on the mat.", "a well-known, long-term plan", "e.g. this, i.e. that", "-v"],
)
def test_plain_prose_has_no_identifiers(text: str) -> None:
    assert identifiers(text) == []


def test_a_whole_identifier_is_a_term_of_query_and_document() -> None:
    encoder = Bm25Encoder()
    assert not identifier_terms("how do pandas eat bamboo")
    whole = set(identifier_terms("what does --strip-components do"))
    assert len(whole) == 1
    assert whole <= set(encoder.query("what does --strip-components do").indices)
    assert whole <= set(encoder.count("tar --strip-components=2").counts)
    assert not whole & set(encoder.count("--strip removes components").counts)


def _on_the_whole_text(text: str) -> list[str]:
    """The definition: the pattern run over the whole text, with the same trimming rules."""
    found = []
    for match in _IDENTIFIER.finditer(text):
        token = match.group(0).rstrip(_TRAILING)
        if len(token) >= 3 and any(c.isalpha() for c in token):
            found.append(token.lower())
    return found


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "os.path.join",
                    "--strip-components",
                    "getElementById",
                    "E0425",
                    "0x80070005",
                    "~/.config/x",
                    "snake_case",
                    "std::vector",
                    "Hello",
                    "cat",
                    "IL-6",
                    "mRNAs",
                    "HTTP",
                    "2024",
                ]
            ),
            st.text(alphabet="aZx09_-./~:>+=()[],;'\"`é中 \t\n", max_size=12),
        ),
        max_size=12,
    ).map(" ".join)
)
def test_word_by_word_finds_what_the_pattern_finds_on_the_whole_text(text: str) -> None:
    assert identifiers(text) == _on_the_whole_text(text)
