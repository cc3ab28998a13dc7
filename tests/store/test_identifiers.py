"""Which tokens count as whole identifiers in the BM25 vectors."""

from __future__ import annotations

import pytest

from archivist.rag.store.qdrant.sparse import Bm25Encoder, identifiers


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


def test_a_query_without_identifiers_has_no_exact_list() -> None:
    encoder = Bm25Encoder()
    assert encoder.exact("how do pandas eat bamboo") is None
    exact = encoder.exact("what does --strip-components do")
    assert exact is not None and len(exact.indices) == 1
    assert set(exact.indices) <= set(encoder.query("what does --strip-components do").indices)
    assert set(exact.indices) <= set(encoder.count("tar --strip-components=2").counts)
