"""Qdrant Edge remembers query terms' IDF per collection state: a repeated term skips the
engine, any write or deletion is seen by the next lookup, and one scope never answers for
another."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import qdrant_edge as edge

from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant.edge.term_cache import TermIdfCache
from archivist.rag.store.qdrant.filter import Match, Where
from archivist.testing.store import DIMENSIONS, record


@pytest.fixture(params=["auto-optimize", "no-optimize"])
async def store(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[QdrantStore]:
    """With and without segment indexing after writes: each changes the collection's state."""
    threshold = 20_000 if request.param == "auto-optimize" else None
    async with QdrantStore(path=tmp_path, auto_optimize_threshold=threshold) as opened:
        await opened.create_collection("c", DIMENSIONS)
        await opened.insert(
            "c",
            [
                record("a1", 0, total=1, text="Apple orchards are pruned in late winter.", t="a"),
                record("a2", 0, total=1, text="Pear trees flower in spring.", t="a"),
                record("b1", 0, total=1, text="Zebra stripes confuse flies.", t="b"),
            ],
        )
        yield opened


@pytest.fixture
def engine_lookups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many terms each engine lookup of term weights asked for."""
    asked: list[int] = []
    original = edge.QueryBatchRequest

    def counting(requests: list[edge.QueryRequest]) -> edge.QueryBatchRequest:
        asked.append(len(requests))
        return original(requests)

    monkeypatch.setattr(edge, "QueryBatchRequest", counting)
    return asked


async def test_a_repeated_term_is_answered_without_the_engine(
    store: QdrantStore, engine_lookups: list[int]
) -> None:
    first = await store.query_term_weights("c", "apple orchards", {"t": "a"})
    assert len(first) == 2 and engine_lookups == [2]
    again = await store.query_term_weights("c", "apple orchards", {"t": "a"})
    assert again == first and engine_lookups == [2]
    # Only the new term goes to the engine; the remembered one keeps its weight.
    more = await store.query_term_weights("c", "orchards pear", {"t": "a"})
    assert engine_lookups == [2, 1]
    orchards = next(iter(set(first) & set(more)))
    assert more[orchards] == first[orchards]


async def test_a_term_absent_from_the_scope_stays_absent_until_a_write_adds_it(
    store: QdrantStore, engine_lookups: list[int]
) -> None:
    absent = await store.query_term_weights("c", "zebra", {"t": "a"})
    assert await store.query_term_weights("c", "zebra", {"t": "a"}) == absent
    assert engine_lookups == [1]  # the absence was remembered too
    # The other tenant's scope holds the term: its own lookup, its own answer (held: lower).
    held = await store.query_term_weights("c", "zebra", {"t": "b"})
    assert held.keys() == absent.keys() and held != absent
    await store.insert("c", [record("a3", 0, total=1, text="A zebra grazes.", t="a")])
    assert await store.query_term_weights("c", "zebra", {"t": "a"}) != absent
    await store.delete("c", "a3")
    assert await store.query_term_weights("c", "zebra", {"t": "a"}) == absent


async def test_weights_after_a_write_are_what_a_fresh_store_reads(
    store: QdrantStore, tmp_path: Path
) -> None:
    before = await store.query_term_weights("c", "apple pear", {"t": "a"})
    await store.insert(
        "c", [record(f"n{n}", 0, total=1, text="An apple a day.", t="a") for n in range(4)]
    )
    after = await store.query_term_weights("c", "apple pear", {"t": "a"})
    assert after != before  # apple got commoner: its IDF fell
    await store.__aexit__(None, None, None)
    async with QdrantStore(path=tmp_path, auto_optimize_threshold=None) as reopened:
        assert await reopened.query_term_weights("c", "apple pear", {"t": "a"}) == after


def test_the_cache_keeps_versions_and_scopes_apart_and_stays_bounded() -> None:
    cache = TermIdfCache(max_terms=5)
    a, b = Where((Match("t", "a"),)), Where((Match("t", "b"),))
    cache.remember(1, a, {7: 2.0, 8: None})
    assert cache.known(1, a, [7, 8, 9]) == {7: 2.0, 8: None}
    assert cache.known(2, a, [7]) == {} and cache.known(1, b, [7]) == {}
    cache.remember(1, b, {7: 1.0, 9: 1.5})
    cache.remember(2, a, {7: 3.0})  # over 5 terms in all: the least recent scope goes
    assert cache.known(1, a, [7]) == {}
    assert cache.known(2, a, [7]) == {7: 3.0} and cache.known(1, b, [9]) == {9: 1.5}
    cache.remember(3, a, {n: 1.0 for n in range(10)})  # larger than the whole cache
    assert cache.known(3, a, [0]) == {}
