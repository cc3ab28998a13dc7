"""Query terms weigh by their IDF with the language's background counted in
(`archivist.rag.store.core.background`), so a small collection weighs words as the language does."""

from __future__ import annotations

import math

import pytest

from archivist.rag.store.core.background import (
    BACKGROUND_CHUNKS,
    background_share,
    background_shares,
    term_weight,
)
from archivist.rag.store.core.bm25 import Bm25Encoder

ENCODER = Bm25Encoder()


def weight_of(word: str, held_by: int = 0, chunks: int = 0) -> float:
    """The weight of `word`'s first term (a Chinese word is also its bigram; both weigh alike)."""
    term = ENCODER.query(word).indices[0]
    return term_weight(term, held_by, chunks)


def test_a_term_the_background_does_not_know_weighs_as_bm25_over_both() -> None:
    (term,) = set(ENCODER.query("zxqvbnmword").indices)
    assert term not in background_shares()
    total = 30 + BACKGROUND_CHUNKS
    assert term_weight(term, 3, 30) == pytest.approx(math.log(1 + (total - 3 + 0.5) / 3.5))


@pytest.mark.parametrize(
    ("common", "rare"),
    [("people", "mitochondria"), ("water", "phosphorylation"), ("中国", "汉朝")],
)
def test_in_an_empty_collection_a_common_word_weighs_less_than_a_rare_one(
    common: str, rare: str
) -> None:
    assert weight_of(common) < weight_of(rare)


def test_a_large_collection_weighs_a_word_by_its_own_frequencies() -> None:
    # A word the language uses often: in five chunks it weighs as the language's whether one
    # or all of them hold it; in a million, by how many of the collection's chunks hold it.
    assert weight_of("people", 1, 5) == pytest.approx(weight_of("people", 5, 5), abs=0.1)
    assert weight_of("people", 1, 1_000_000) > weight_of("people", 100_000, 1_000_000) + 3


def test_a_word_held_as_often_as_the_language_holds_it_weighs_the_same_at_any_size() -> None:
    term = ENCODER.query("protein").indices[0]
    share = background_shares()[term]
    weights = [term_weight(term, round(share * n), n) for n in (10, 1_000, 100_000, 1_000_000)]
    assert max(weights) - min(weights) < 0.5


def test_the_table_is_the_shipped_file_of_plausible_shares() -> None:
    shares = background_shares()
    assert len(shares) > 50_000
    assert all(0.0 < share <= 1.0 for share in shares.values())


def test_in_an_empty_collection_an_unknown_term_weighs_as_held_by_none_of_the_background() -> None:
    (term,) = set(ENCODER.query("zxqvbnmword").indices)
    expected = math.log(1 + (BACKGROUND_CHUNKS + 0.5) / 0.5)
    assert term_weight(term, 0, 0) == pytest.approx(expected)
    assert term_weight(term, -3, -5) == pytest.approx(expected)  # counts below zero are none


def test_a_term_beyond_the_table_s_last_id_has_no_share() -> None:
    last = max(background_shares())
    assert background_share(last) > 0
    assert background_share(last + 1) == 0.0
    assert background_share(0x7FFFFFFF) == (background_shares().get(0x7FFFFFFF, 0.0))
    assert background_share(-1) == 0.0
