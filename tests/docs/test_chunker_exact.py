"""ApproxTokenChunker's contract checked exactly, so that dropping the overlap or losing text
fails: consecutive windows share exactly a tail of the previous window (at most `overlap`
tokens, never nothing when overlap > 0), and the windows minus their overlaps are the input,
modulo whitespace."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from archivist.rag import ApproxTokenChunker
from archivist.rag.chunker.approx_token import BYTES_PER_TOKEN


def spans(text: str, pieces: list[str]) -> list[tuple[int, int]]:
    """Where each piece lies in `text`, found in order (each starts after the previous start)."""
    found: list[tuple[int, int]] = []
    at = 0
    for piece in pieces:
        start = text.find(piece, at)
        assert start != -1, (piece, text[at : at + 80])
        found.append((start, start + len(piece)))
        at = start  # a window may repeat the previous one whole (tiny chunk sizes)
    return found


def unique_words(count: int, separators: list[str]) -> str:
    """`count` distinct words joined by the given whitespace runs (cycled)."""
    return "".join(f"w{i:05d}{separators[i % len(separators)]}" for i in range(count)).strip()


separator_runs = st.lists(st.sampled_from([" ", "  ", "\n", "\n\n", " \t", ". "]), min_size=1)


@settings(max_examples=300, deadline=None)
@given(
    count=st.integers(min_value=0, max_value=400),
    separators=separator_runs,
    size=st.integers(min_value=4, max_value=120),  # every window holds a whole, unique word
    data=st.data(),
)
def test_overlaps_are_exact_tails_and_the_rest_is_the_input(
    count: int, separators: list[str], size: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(min_value=0, max_value=size - 1))
    text = unique_words(count, separators)
    pieces = ApproxTokenChunker(chunk_size=size, overlap=overlap).split_text(text)
    places = spans(text, pieces)
    rebuilt = pieces[0] if pieces else ""
    overlapping = 0
    for (previous, following), ((_, end), (start, _)) in zip(
        itertools.pairwise(pieces), itertools.pairwise(places), strict=True
    ):
        shared = text[start:end] if start < end else ""
        if shared:
            overlapping += 1
            # the overlap is exactly the previous window's tail and the next window's head
            assert previous.endswith(shared) and following.startswith(shared)
            assert len(shared.encode()) <= overlap * BYTES_PER_TOKEN
        else:
            assert not text[end:start].strip(), "text between two windows was lost"
        rebuilt += " " + following[len(shared) :]
    # the windows minus their overlaps are the input, modulo whitespace
    assert "".join(rebuilt.split()) == "".join(text.split())
    if overlap == 0:
        assert overlapping == 0
    elif len(pieces) >= 3 and separators == [" "]:
        assert overlapping == len(pieces) - 1  # single spaces: every border overlaps


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=2000), size=st.integers(min_value=1, max_value=60), data=st.data())
def test_any_text_is_covered_in_order_without_overlap(
    text: str, size: int, data: st.DataObject
) -> None:
    """With overlap 0 the windows, joined, are the input minus its whitespace, in order."""
    pieces = ApproxTokenChunker(chunk_size=size, overlap=0).split_text(text)
    assert "".join("".join(p.split()) for p in pieces) == "".join(text.split())
    for piece in pieces:
        assert len(piece.encode()) <= size * BYTES_PER_TOKEN


def test_a_known_text_overlaps_by_its_last_words() -> None:
    text = unique_words(60, [" "])  # 60 words of 7 bytes
    pieces = ApproxTokenChunker(chunk_size=20, overlap=5).split_text(text)
    assert len(pieces) > 3
    for previous, following in itertools.pairwise(pieces):
        # 5 tokens = 20 bytes back from the border, moved to the next word start: 2 words
        assert following.split()[:2] == previous.split()[-2:]
        assert following.split()[2] not in previous
