"""Numbers are BM25 terms: how they are cut out of text, and that a query's number matches
the same number written another way, and no other number."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archivist.rag.store.core.bm25 import Bm25Encoder
from archivist.rag.store.core.terms import exact_lookup, identifier_terms, number_terms, numbers


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("the service listens on port 8731.", ["8731"]),
        ("RFC 9457 and RFC9457", ["9457", "9457"]),
        ("revenue in 1999", ["1999"]),
        ("pi is 3.14, e is 2.718", ["3.14", "2.718"]),
        ("release v2.0.11, not 2.0.1", ["2.0.11", "v2.0.11", "2.0.1"]),
        ("a total of 1,299.99 euros", ["1299.99"]),
        ("the list 1,2,3", ["1", "2", "3", "1,2,3"]),
        ("signed on 2024-03-15", ["2024", "03", "15", "2024-03-15"]),
        ("127.0.0.1:8080", ["127.0.0.1", "8080", "127.0.0.1:8080"]),
        ("error E0425", ["0425"]),
        ("python3 and sha256", ["3", "256"]),
        ("服务默认监听8731端口，２０２６年", ["8731", "2026"]),
        ("no digits here at all", []),
    ],
)
def test_numbers_are_found(text: str, found: list[str]) -> None:
    assert numbers(text) == found


def _shares_a_number_term(query: str, document: str) -> bool:
    encoder = Bm25Encoder()
    number_terms = set(encoder.query(query).indices) - set(encoder.query(_no_digits(query)).indices)
    return bool(number_terms & set(encoder.count(document).counts))


def _no_digits(text: str) -> str:
    return "".join(c for c in text if not c.isdigit())


@pytest.mark.parametrize(
    ("query", "document"),
    [
        ("port 8731", "connect to localhost:8731 first"),
        ("RFC 9457", "problem details (RFC9457)"),
        ("what changed in 2.0.11", "Release v2.0.11 fixed the parser."),
        ("invoice of 1299.99", "The total was 1,299.99 euros."),
        ("port 8731", "服务默认监听８７３１端口"),
        ("backups from 2024", "the backup of 2024-03-15 failed"),
    ],
)
def test_a_number_matches_where_it_is_written_another_way(query: str, document: str) -> None:
    assert _shares_a_number_term(query, document)


@pytest.mark.parametrize(
    ("query", "document"),
    [
        ("port 8731", "port 8732"),
        ("item 221", "item 2210 and item 122"),
        ("release 2.0.11", "release 2.0.1"),
        ("revenue in 1999", "revenue in 1989"),
    ],
)
def test_another_number_does_not_match(query: str, document: str) -> None:
    assert not _shares_a_number_term(query, document)


def test_the_first_term_layout_has_no_number_terms() -> None:
    old, new = Bm25Encoder(1), Bm25Encoder()
    assert old.query("port 8731").indices == old.query("port").indices
    assert new.query("port 8731").indices != new.query("port").indices
    assert old.count("port 8731").counts == old.count("port").counts
    with pytest.raises(ValueError, match="term layout 3"):
        Bm25Encoder(3)


def test_numbers_are_extra_terms_not_extra_length() -> None:
    encoder = Bm25Encoder()
    assert encoder.count("port 8731").length == encoder.count("port").length
    # A text of numbers alone is one token long, so it gets a BM25 vector.
    assert encoder.count("404").length == 1 and encoder.count("404").counts


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=10**12), st.text(max_size=40))
def test_any_integer_in_prose_is_one_term(value: int, noise: str) -> None:
    text = f"the value {value} is set"
    assert numbers(text) == [str(value)]
    for term in numbers(noise):  # any text: terms hold a digit and never raise
        assert any(c.isdigit() for c in term)


@pytest.mark.parametrize(
    ("text", "lookup"),
    [
        ("E0499", True),
        ("--strip-components", True),
        ("8731", True),
        ("(8731) 8732", True),
        ("os.path.join", True),
        ("2024-03-15", True),
        ("port 8731", False),
        ("what does E0499 mean", False),
        ("RUSTDOCFLAGS", False),
        ("熊猫", False),
        ("", False),
    ],
)
def test_a_query_of_names_and_numbers_alone_is_an_exact_lookup(text: str, lookup: bool) -> None:
    assert exact_lookup(text) is lookup


def test_a_hex_literal_is_an_identifier_not_a_number() -> None:
    assert numbers("HRESULT 0x80070005") == []
    assert set(identifier_terms("0x80070005")) <= set(Bm25Encoder().query("0x80070005").indices)
    assert not number_terms("0x80070005")
