"""Counting a chunk's terms piece by piece, with pieces remembered, gives exactly the counts of
counting the whole text at once: the reference below is that whole-text count, written
out here as the encoder did it before pieces were remembered."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archivist.rag.store.core.bm25 import Bm25Encoder, TermCounts
from archivist.rag.store.core.term_counting import TermCounter, word_counter
from archivist.rag.store.core.terms import cjk_bigrams, identifier_terms, number_terms
from archivist.testing import corpora

ROOT = Path(__file__).resolve().parents[2]
_WORDS = word_counter()


def whole_text_counts(text: str, layout: int) -> TermCounts:
    """The term counts of `text` worked out on the whole text in one pass."""
    raw = _WORDS.embed_document(text)
    counts = Counter({i: max(1, round(v)) for i, v in zip(raw.indices, raw.values, strict=True)})
    counts.update(cjk_bigrams(text))
    length = sum(counts.values())
    counts.update(identifier_terms(text))
    if layout >= 2:
        counts.update(number_terms(text))
        length = max(length, 1 if counts else 0)
    return TermCounts(dict(counts), length)


def encoder_with(counter: TermCounter, layout: int) -> Bm25Encoder:
    """An encoder counting through `counter` (a fresh one, so each test starts cold)."""
    encoder = Bm25Encoder(layout)
    encoder.counter = counter
    return encoder


def varied_texts() -> Iterator[str]:
    """Prose, code, command lines and numbers in English; Chinese, Japanese, Korean, Greek
    and mixed text; odd white space and punctuation; cut into chunk-sized pieces."""
    for path in sorted([*ROOT.glob("docs/**/*.md"), ROOT / "README.md"])[:40]:
        text = path.read_text(encoding="utf-8")
        yield from (text[i : i + 1200] for i in range(0, min(len(text), 12_000), 1200))
    for path in sorted((ROOT / "src" / "archivist" / "rag" / "store").glob("**/*.py"))[:15]:
        text = path.read_text(encoding="utf-8")
        yield from (text[i : i + 1200] for i in range(0, min(len(text), 6000), 1200))
    topics = json.loads((Path(corpora.__file__).parent / "zh_topics.json").read_text("utf-8"))
    for document in topics["documents"]:
        yield json.dumps(document, ensure_ascii=False)
    yield from [
        "IL-1β, IL-4 and IL-12 control the fate of group 2 innate lymphoid cells (ILC2s).",
        "β-catenin (encoded by CTNNB1) binds 14-3-3σ; p ≥ 0.05, n = 1,299 (−3.5%).",
        "このエントリは有効にするには、上記のキーの Python 3.12 を削除してください。",
        "一般的に、署名と暗号化に同一の鍵を用いることは良いことではありません (YYYY-MM-DD)。",
        "정수 타입 간의 변환 규칙은 C 언어의 관례를 따르지만 u16 1000 as u16",
        "服务默认监听8731端口，２０２６年 v2.0.11 发布；大熊猫 panda 熊猫",
        "Straße café naïve Ærøskøbing İstanbul ĳssel ﬁnal “quoted” — dash… ellipsis",
        "tar --strip-components=1 -xzf ~/.config/app/archive.tar.gz && os.path.join(a, b)",
        "getElementById QdrantStore VALGRIND_OPTS snake_case E0425 0x80070005 std::vector",
        "port 8731 127.0.0.1:8080 2024-03-15 1,2,3 3.14 python3 sha256 RFC9457",
        "tabs\tand\nnew\r\nlines\u00a0nbsp\u2003em\u3000ideographic\x1cfile\x1dgroup",
        "word word word word word the the the a an of running runs ran",
        "",
        "   ",
        "404",
        "---- ... !!! ???",
    ]


@pytest.mark.parametrize("layout", [1, 2])
def test_counts_match_the_whole_text_count_cold_and_remembered(layout: int) -> None:
    encoder = encoder_with(TermCounter(), layout)
    texts = list(varied_texts())
    assert len(texts) > 200
    for round_ in range(3):  # first sight, second sight (learnt), then remembered
        for text in texts:
            assert encoder.count(text) == whole_text_counts(text, layout), (round_, text[:80])


def test_counts_stay_exact_when_the_memory_is_full() -> None:
    counter = TermCounter(max_pieces=50)  # turns its halves over many times
    encoder = encoder_with(counter, 2)
    texts = list(varied_texts())[:120]
    for text in texts + texts[::-1] + texts:
        assert encoder.count(text) == whole_text_counts(text, 2), text[:80]
    assert len(counter._newer) <= 25 and len(counter._seen) <= 50


def test_a_piece_is_remembered_the_second_time_it_is_seen() -> None:
    counter = TermCounter()
    counter.count("a unique7 piece", numbers=True)
    assert not counter._newer
    counter.count("unique7 again", numbers=True)
    assert "unique7" in counter._newer
    assert "again" not in counter._newer


def test_a_piece_used_again_moves_back_to_the_newer_half_unchanged() -> None:
    counter = TermCounter(max_pieces=4)  # halves of two pieces
    counter.count("alpha beta", numbers=True)
    counter.count("alpha beta", numbers=True)
    learnt = counter._newer["alpha"]
    counter.count("gamma delta", numbers=True)
    counter.count("gamma delta", numbers=True)  # fills the newer half: alpha is older now
    assert "alpha" in counter._older and "alpha" not in counter._newer
    counter.count("alpha", numbers=True)
    assert counter._newer["alpha"] is learnt


_LATIN = "abcXYZ0189 .,;:!?()[]{}'\"`-_/\\+=*&%$#@~^|<>éßøİı\u2014\u2026\u00ad\t\n\r"
_ODD_SPACE = "\u00a0\x0b\x0c\x1c\x85\u2028\u200b\u202f\u3000"
_OTHER = "βαγΔ−≥∼中文熊猫日本語のカナ한국어"


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.text(alphabet=_LATIN, min_size=1, max_size=14)
        | st.text(alphabet=_LATIN + _OTHER + _ODD_SPACE, min_size=1, max_size=8)
        | st.sampled_from(["the", "cells", "IL-1β", "v2.0.11", "--flag=x", "os.path", "E0425"]),
        max_size=40,
    ),
    st.sampled_from([" ", "  ", "\n", "\t", ""]),
)
def test_random_texts_count_as_a_whole(pieces: list[str], separator: str) -> None:
    text = separator.join(pieces)
    counter = TermCounter(max_pieces=64)
    encoder = encoder_with(counter, 2)
    for _ in range(3):
        assert encoder.count(text) == whole_text_counts(text, 2)
