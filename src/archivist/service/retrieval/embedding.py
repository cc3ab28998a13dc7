"""The service's embedding model: queries and documents on separate model instances.

A local model runs one inference at a time, so sharing one instance would queue every
search behind whole batches of document chunks. Queries get their own instance (batched
across concurrent searches by `QueryBatcher`); documents get one limited to
`index_threads` cores and go through the on-disk cache (re-indexing re-embeds documents,
never queries; caching queries would grow the cache with every search and write to disk on
each one).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from archivist.embedding import EmbeddingModelBase
from archivist.embedding.base import BatchItem, EmbeddingInput, InputType
from archivist.embedding.response import EmbeddingResponse
from archivist.embedding.tokenizer import ModelTokenizer
from archivist.errors import InvalidArgumentError
from archivist.rag.knowledge import factories
from archivist.service.retrieval.query_batcher import QueryBatcher
from archivist.service.retrieval.tenant_cache import TenantCachedEmbeddingModel

EmbeddingObserver = Callable[[InputType, float], None]
"""Told the input type and the seconds of each embedding call (the service's metrics)."""


class SplitModel(EmbeddingModelBase):
    """`query_model` for queries (batched), `document_model` behind a cache for documents."""

    def __init__(
        self,
        query_model: EmbeddingModelBase,
        document_model: EmbeddingModelBase,
        cache_dir: str,
        observe: EmbeddingObserver | None = None,
    ) -> None:
        if query_model.cache_identity != document_model.cache_identity:
            raise InvalidArgumentError(
                "query_model and document_model must be the same model", argument="document_model"
            )
        super().__init__(
            model=query_model.model,
            dimensions=query_model.dimensions,
            supports_multimodal=query_model.supports_multimodal,
            batch_size=query_model.batch_size,
            max_concurrency=query_model.max_concurrency,
            max_retries=0,
        )
        self.query_model = query_model
        self.documents = TenantCachedEmbeddingModel(document_model, cache_dir)
        self.queries = QueryBatcher(query_model)
        self.observe = observe

    @property
    def cache_identity(self) -> str:
        return self.query_model.cache_identity

    def chunk_tokenizer(self) -> ModelTokenizer | None:
        """The model's own tokenizer: the service's chunks fit its input, as the CLI's do."""
        return self.query_model.chunk_tokenizer()

    async def __call__(
        self, inputs: Sequence[EmbeddingInput], input_type: InputType = "document"
    ) -> EmbeddingResponse:
        started = time.perf_counter()
        try:
            if input_type == "query":
                return await self.queries.embed(inputs)
            return await self.documents(inputs, input_type)
        finally:
            if self.observe is not None:
                self.observe(input_type, time.perf_counter() - started)

    async def _embed_batch(
        self, batch: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        return await self.query_model(list(batch), input_type)


def service_model(
    name: str,
    cache_dir: str,
    index_threads: int,
    observe: EmbeddingObserver | None = None,
    index_niceness: int = 0,
) -> EmbeddingModelBase:
    """The local model `name` twice: for queries, and for documents on `index_threads` cores
    at `index_niceness`; `observe` is told the duration of each call."""
    queries = factories.embedding_model(name)
    try:
        documents = factories.embedding_model(
            name, threads=index_threads, document_niceness=index_niceness
        )
    except TypeError:  # a registered model without these settings
        documents = factories.embedding_model(name)
    return SplitModel(queries, documents, cache_dir, observe)
