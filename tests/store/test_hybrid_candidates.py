"""A hybrid candidate found by one side only is judged by the same evidence as one both sides
find: its similarity and its BM25 share are each read whichever side brought it in."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from archivist.rag import PgVectorStore
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.store import DIMENSIONS, record, unit
from pgvector_server import pgvector_server

QUERY = unit(0)
FAR = [0.6, 0.0, 0.8, 0.0]  # cosine 0.6 with the query: below every near chunk
TEXT = "The kiln fires porcelain at 1300 degrees."


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with pgvector_server() as url:
        yield url


@pytest_asyncio.fixture(params=["edge", "client-local", "pgvector"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[QdrantStore | PgVectorStore]:
    if request.param == "pgvector":
        url = request.getfixturevalue("pg_url")
        async with PgVectorStore(url, table_prefix="candidates") as opened:
            await opened.delete_collection("docs")
            yield opened
        return
    if request.param == "edge":
        async with QdrantStore(location=":memory:") as opened:
            yield opened
        return
    from qdrant_client import AsyncQdrantClient

    client = AsyncQdrantClient(location=":memory:")
    try:
        async with QdrantStore.from_client(client) as opened:
            yield opened
    finally:
        await client.close()


async def test_a_candidate_only_bm25_found_keeps_its_similarity(
    store: QdrantStore | PgVectorStore,
) -> None:
    """Five chunks lie nearer the query (cosine 0.74 to 0.89) than the kiln note (0.6),
    which alone holds the query's words: with 3 candidates a side only BM25 brings the note
    in, with 50 both sides do. Its relevance must be the same either way."""
    await store.create_collection("docs", DIMENSIONS)
    near = [
        record(f"near{n}", 0, unit(0, lean=0.5 + 0.1 * n), total=1, text=f"Memo {n}.")
        for n in range(5)
    ]
    await store.insert("docs", [*near, record("kiln", 0, FAR, total=1, text=TEXT)])

    def kiln_relevance(hits: list) -> float | None:  # type: ignore[type-arg]
        [kiln] = [hit for hit in hits if hit.document_id == "kiln"]
        return kiln.relevance  # type: ignore[no-any-return]

    store.HYBRID_DEPTH = 50
    both = await store.search("docs", QUERY, 3, query_text="kiln porcelain", mode="hybrid")
    store.HYBRID_DEPTH = 3
    one = await store.search("docs", QUERY, 3, query_text="kiln porcelain", mode="hybrid")
    dense_top = await store.search("docs", QUERY, 3, mode="dense")
    assert "kiln" not in {hit.document_id for hit in dense_top}  # BM25 alone brings it in
    assert kiln_relevance(one) is not None
    assert kiln_relevance(one) == pytest.approx(kiln_relevance(both), abs=1e-6)
