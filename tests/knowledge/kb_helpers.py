"""Embedding-model wrappers the knowledge-base tests use to observe calls."""

from collections.abc import Sequence

from archivist.embedding import EmbeddingModelBase, EmbeddingResponse


class CountingModel(EmbeddingModelBase):
    """Wraps a real model and records every call (inputs, input_type)."""

    def __init__(self, inner: EmbeddingModelBase) -> None:
        super().__init__(
            model=inner.model,
            dimensions=inner.dimensions,
            supports_multimodal=inner.supports_multimodal,
            batch_size=10_000,
        )
        self.inner = inner
        self.calls: list[tuple[list[object], str]] = []

    async def __call__(
        self, inputs: Sequence[object], input_type: str = "document"
    ) -> EmbeddingResponse:  # type: ignore[override]
        self.calls.append((list(inputs), input_type))
        return await self.inner(inputs, input_type=input_type)  # type: ignore[arg-type]

    def chunk_tokenizer(self):  # type: ignore[no-untyped-def]
        return self.inner.chunk_tokenizer()

    async def _embed_batch(self, batch, input_type):  # type: ignore[no-untyped-def]
        raise AssertionError("not used")
