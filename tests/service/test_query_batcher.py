"""Concurrent queries share model calls and each gets its own vectors back."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from archivist.embedding import EmbeddingModelBase, LocalEmbeddingModel
from archivist.embedding.response import EmbeddingResponse
from archivist.service.retrieval.query_batcher import QueryBatcher


class Recording(EmbeddingModelBase):
    """A real model that records each call's size and can be told to fail once."""

    def __init__(self, inner: EmbeddingModelBase) -> None:
        super().__init__(model=inner.model, dimensions=inner.dimensions, batch_size=10_000)
        self.inner = inner
        self.calls: list[int] = []
        self.fail_next = False

    async def __call__(
        self, inputs: Sequence[object], input_type: str = "document"
    ) -> EmbeddingResponse:  # type: ignore[override]
        self.calls.append(len(inputs))
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("model down")
        return await self.inner(inputs, input_type=input_type)  # type: ignore[arg-type]

    async def _embed_batch(self, batch, input_type):  # type: ignore[no-untyped-def]
        raise AssertionError("not used")


async def test_concurrent_queries_are_batched_and_answered_in_order() -> None:
    inner = LocalEmbeddingModel()
    model = Recording(inner)
    batcher = QueryBatcher(model, max_batch=8)
    queries = [f"question number {n} about invoices" for n in range(20)]
    batched = await asyncio.gather(*(batcher.embed([q]) for q in queries))
    single = await inner(queries, input_type="query")
    for response, expected in zip(batched, single.embeddings, strict=True):
        (vector,) = response.embeddings
        assert max(abs(a - b) for a, b in zip(vector, expected, strict=True)) < 1e-4
    assert sum(model.calls) == 20 and len(model.calls) < 20 and max(model.calls) <= 8


async def test_a_failing_call_fails_its_callers_and_the_next_call_works() -> None:
    model = Recording(LocalEmbeddingModel())
    batcher = QueryBatcher(model)
    model.fail_next = True
    results = await asyncio.gather(
        batcher.embed(["a"]), batcher.embed(["b"]), return_exceptions=True
    )
    assert all(isinstance(r, RuntimeError) for r in results)
    ok = await batcher.embed(["works again", "two"])
    assert len(ok.embeddings) == 2
