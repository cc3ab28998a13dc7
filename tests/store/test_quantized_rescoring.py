"""A quantized collection ranks by its int8 copies, then rescores with the original vectors:
the hits are the true nearest and their scores the originals' similarities."""

from __future__ import annotations

import numpy as np
import pytest

from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.store import record

DIMENSIONS = 64


async def test_indexed_quantized_segments_find_and_score_as_the_originals() -> None:
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((40, DIMENSIONS)).astype(np.float32)
    count = 4000  # clusters of close neighbours, which int8 copies alone confuse
    vectors = centres[np.arange(count) % 40] + 0.4 * rng.standard_normal(
        (count, DIMENSIONS)
    ).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    async with QdrantStore(location=":memory:", auto_optimize_threshold=1000) as store:
        await store.create_collection("c", DIMENSIONS, sparse=False)
        for start in range(0, count, 500):
            await store.insert(
                "c",
                [
                    record(f"d{n}", 0, vectors[n].tolist(), total=1)
                    for n in range(start, start + 500)
                ],
            )
        await store.optimize("c")  # every segment indexed, with its int8 copies
        queries = centres + 0.4 * rng.standard_normal(centres.shape).astype(np.float32)
        found = 0
        for query in queries / np.linalg.norm(queries, axis=1, keepdims=True):
            similarities = vectors @ query
            exact = set(np.argsort(-similarities)[:5].tolist())
            hits = await store.search("c", query.tolist(), 5)
            numbers = [int(hit.document_id[1:]) for hit in hits]
            found += len(exact & set(numbers))
            # float16 originals: similarities within about 1e-3 of the float32 ones.
            assert [hit.score for hit in hits] == [
                pytest.approx(float(similarities[n]), abs=2e-3) for n in numbers
            ]
        assert found / (5 * len(queries)) >= 0.95


async def test_hybrid_relevance_on_quantized_segments_is_the_originals() -> None:
    """A hybrid search over indexed int8 segments judges each hit by its original vector's
    similarity: the same relevance as a collection that keeps only the originals."""
    rng = np.random.default_rng(5)
    words = [f"w{n}" for n in range(30)]
    centres = rng.standard_normal((40, DIMENSIONS)).astype(np.float32)
    count = 3000
    vectors = centres[np.arange(count) % 40] + 0.4 * rng.standard_normal(
        (count, DIMENSIONS)
    ).astype(np.float32)
    texts = [" ".join(rng.choice(words, size=6)) for _ in range(count)]
    queries = centres[:20] + 0.4 * rng.standard_normal((20, DIMENSIONS)).astype(np.float32)
    found: dict[str | None, list[list[tuple[str, float | None]]]] = {}
    for quantization in ("int8", None):
        async with QdrantStore(
            location=":memory:", quantization=quantization, auto_optimize_threshold=1000
        ) as store:
            await store.create_collection("c", DIMENSIONS)
            for start in range(0, count, 500):
                await store.insert(
                    "c",
                    [
                        record(f"d{n}", 0, vectors[n].tolist(), total=1, text=texts[n])
                        for n in range(start, start + 500)
                    ],
                )
            await store.optimize("c")
            found[quantization] = [
                [
                    (hit.document_id, hit.relevance)
                    for hit in await store.search(
                        "c",
                        query.tolist(),
                        5,
                        query_text=" ".join(words[q : q + 3]),
                        mode="hybrid",
                    )
                ]
                for q, query in enumerate(queries)
            ]
    shared = 0
    for quantized, original in zip(found["int8"], found[None], strict=True):
        # Either graph may miss a candidate; a hit both find is judged alike.
        judged = dict(original)
        for document, got in quantized:
            if document in judged:
                shared += 1
                assert got == pytest.approx(judged[document], abs=1e-3), document
    assert shared >= 0.9 * 5 * len(queries)
