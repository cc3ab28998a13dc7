"""A hybrid search reads its candidates' stored vectors by id after both sides answered, and
ranks exactly as when the searches return the vectors with the hits."""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from archivist.message import Base64Source, DataBlock, TextBlock
from archivist.rag.document import Chunk
from archivist.rag.record import VectorRecord
from archivist.rag.store.core.ranking import (
    Judged,
    cosine,
    judge,
    lexical_evidence,
    rank,
)
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant.backend import SPARSE_VECTOR, ScoredPoint, SearchRequest
from archivist.rag.store.qdrant.filter import HasId, Where
from archivist.rag.store.qdrant.hybrid import tie_break

DIMENSIONS = 8
WORDS = [f"w{n}" for n in range(40)]


def _reference_judged(
    hit: ScoredPoint,
    similarity: float | None,
    query_idf: dict[int, float],
) -> Judged[ScoredPoint]:
    match, held = lexical_evidence(query_idf, hit.weights) if hit.weights else (None, None)
    return judge(hit, similarity or 0.0, similarity, match, held)


async def _reference(
    store: QdrantStore,
    where: Where,
    dense: list[float],
    text: str,
    limit: int,
    depth: int,
    collection: str = "docs",
) -> list[tuple[str, float | None]]:
    """Every candidate of both sides judged from the vectors the searches returned."""
    backend = store._engine._open()
    shape = await store._engine.shape(collection)
    assert shape is not None
    encoder = store._encoder(shape)
    sparse = encoder.query(text)
    from archivist.rag.store.qdrant.hybrid import term_weights

    terms = await term_weights(backend, collection, where, sparse)
    query_idf, sparse = terms.weights, terms.sparse
    by_cosine = shape.distance == "Cosine"
    vectors = (SPARSE_VECTOR,) if by_cosine else ("", SPARSE_VECTOR)
    nearest, matching = await backend.search_batch(
        collection,
        [
            SearchRequest(depth, where, dense=dense, vectors=vectors, payload=False),
            SearchRequest(depth, where, sparse=sparse, vectors=vectors, payload=False),
        ],
    )
    candidates = {hit.id: hit for hit in (*matching, *nearest)}
    if by_cosine:
        similarity = {hit.id: hit.score for hit in nearest}
        unscored = tuple(hit.id for hit in matching if hit.id not in similarity)
        if unscored:
            request = SearchRequest(
                len(unscored), where.also(HasId(unscored)), dense=dense, payload=False
            )
            similarity.update((h.id, h.score) for h in await backend.search(collection, request))
    else:
        norm = math.hypot(*dense)
        similarity = {h.id: cosine(dense, h.vector, norm) for h in candidates.values() if h.vector}
    judged = [
        _reference_judged(hit, similarity.get(point_id), query_idf)
        for point_id, hit in candidates.items()
    ]
    return [(hit.item.id, hit.relevance) for hit in rank(judged, tie_break)[:limit]]


def _corpus(rng: random.Random) -> list[VectorRecord]:
    records = []
    centres = [[rng.gauss(0, 1) for _ in range(DIMENSIONS)] for _ in range(6)]
    for n in range(400):
        centre = centres[n % len(centres)]
        vector = [c + rng.gauss(0, 0.6) for c in centre]
        tenant = "a" if n % 3 else "b"
        metadata = {"tenant_id": tenant}
        if n % 37 == 0:  # an image: no BM25 terms
            content: TextBlock | DataBlock = DataBlock(
                source=Base64Source(data="iVBORw0K", media_type="image/png")
            )
        else:
            words = rng.choices(
                WORDS, weights=[1 / (k + 1) for k in range(len(WORDS))], k=rng.randint(2, 14)
            )
            content = TextBlock(text=" ".join(words))
        records.append(
            VectorRecord(
                vector=vector,
                document_id=f"d{n}",
                chunk=Chunk(
                    content=content,
                    source=f"d{n}.txt",
                    chunk_index=0,
                    total_chunks=1,
                    metadata=metadata,
                ),
            )
        )
    return records


@pytest_asyncio.fixture(
    params=[("edge", "Cosine"), ("edge", "Euclid"), ("client-local", "Cosine")],
    ids=lambda p: "-".join(p),
)
async def filled(request: pytest.FixtureRequest) -> AsyncIterator[QdrantStore]:
    engine, distance = request.param
    if engine == "edge":
        async with QdrantStore(location=":memory:", distance=distance) as store:
            await store.create_collection("docs", DIMENSIONS)
            await store.insert("docs", _corpus(random.Random(7)))
            yield store
        return
    from qdrant_client import AsyncQdrantClient

    client = AsyncQdrantClient(location=":memory:")
    try:
        async with QdrantStore.from_client(client, distance=distance) as store:
            await store.create_collection("docs", DIMENSIONS)
            await store.insert("docs", _corpus(random.Random(7)))
            yield store
    finally:
        await client.close()


async def test_the_ranking_equals_judging_every_candidate(filled: QdrantStore) -> None:
    rng = random.Random(11)
    compared = 0
    for _ in range(40):
        dense = [rng.gauss(0, 1) for _ in range(DIMENSIONS)]
        text = " ".join(rng.sample(WORDS, rng.randint(1, 5)))
        tenant = rng.choice([None, "a", "b"])
        scope = await filled._engine.scope("docs", {"tenant_id": tenant} if tenant else None)
        for depth in (4, 15, 60):
            filled.HYBRID_DEPTH = depth
            for limit in (1, 3, 10):
                expected = await _reference(filled, scope, dense, text, limit, max(limit, depth))
                hits = await filled.search(
                    "docs",
                    dense,
                    limit,
                    {"tenant_id": tenant} if tenant else None,
                    query_text=text,
                    mode="hybrid",
                )
                want = [(await _document_of(filled, point), rel) for point, rel in expected]
                assert [hit.document_id for hit in hits] == [d for d, _ in want], (
                    text,
                    depth,
                    limit,
                    tenant,
                )
                for hit, (_, rel) in zip(hits, want, strict=True):
                    assert hit.relevance == pytest.approx(rel, abs=1e-6)  # float32 storage
                compared += 1
    assert compared == 40 * 9


async def _document_of(store: QdrantStore, point_id: str) -> str:
    payloads = await store._engine._open().retrieve("docs", [point_id])
    return str(payloads[point_id]["document_id"])
