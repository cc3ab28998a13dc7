"""The service's embedding model: documents through the on-disk cache, queries batched.

Caching queries would grow the cache with every distinct search and put a disk write on
every search's path; documents are what re-indexing re-embeds, so only they are cached.
Queries of concurrent searches share model calls (`QueryBatcher`).
"""

from __future__ import annotations

from collections.abc import Sequence

from archivist.embedding import CachedEmbeddingModel, EmbeddingModelBase, LocalEmbeddingModel
from archivist.embedding.base import BatchItem, EmbeddingInput, InputType
from archivist.embedding.response import EmbeddingResponse
from archivist.service.query_batcher import QueryBatcher


class DocumentCachedModel(EmbeddingModelBase):
    """`inner` for queries (batched across concurrent searches), `inner` behind a
    `CachedEmbeddingModel` for documents."""

    def __init__(self, inner: EmbeddingModelBase, cache_dir: str) -> None:
        super().__init__(
            model=inner.model,
            dimensions=inner.dimensions,
            supports_multimodal=inner.supports_multimodal,
            batch_size=inner.batch_size,
            max_concurrency=inner.max_concurrency,
            max_retries=0,
        )
        self.inner = inner
        self.cached = CachedEmbeddingModel(inner, cache_dir)
        self.queries = QueryBatcher(inner)

    @property
    def cache_identity(self) -> str:
        return self.inner.cache_identity

    async def __call__(
        self, inputs: Sequence[EmbeddingInput], input_type: InputType = "document"
    ) -> EmbeddingResponse:
        if input_type == "query":
            return await self.queries.embed(inputs)
        return await self.cached(inputs, input_type)

    async def _embed_batch(
        self, batch: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        return await self.inner(list(batch), input_type)


def service_model(name: str, cache_dir: str) -> EmbeddingModelBase:
    """The local model `name` with document embeddings cached under `cache_dir`."""
    return DocumentCachedModel(LocalEmbeddingModel(name), cache_dir)
