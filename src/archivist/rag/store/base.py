"""`VectorStoreBase`: the contract every vector store implements."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import AsyncIterable
from typing import Literal

from archivist._closable import AsyncClosable
from archivist.errors import InvalidArgumentError
from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary, VectorRecord, VectorSearchResult
from archivist.rag.store.generations import GenerationInfo
from archivist.validation import MetadataFilter as MetadataFilter

SearchMode = Literal["hybrid", "dense", "sparse"]
"""How a search ranks: dense vectors, BM25 sparse vectors, or both fused."""
SEARCH_MODES: tuple[SearchMode, ...] = ("hybrid", "dense", "sparse")


def check_search_mode(mode: object) -> SearchMode:
    """`mode` if it is a search mode; ValueError naming the choices otherwise."""
    for name in SEARCH_MODES:
        if mode == name:
            return name
    raise InvalidArgumentError(
        f"mode must be one of {', '.join(SEARCH_MODES)}; got {mode!r}", argument="mode"
    )


def check_diversity(diversity: object) -> float | None:
    """`diversity` if it is None or a number in [0, 1]; ValueError otherwise."""
    if diversity is None:
        return None
    if isinstance(diversity, bool) or not isinstance(diversity, int | float):
        raise InvalidArgumentError(
            f"diversity must be a number from 0 to 1, got {diversity!r}", argument="diversity"
        )
    if not 0.0 <= float(diversity) <= 1.0:
        raise InvalidArgumentError(
            f"diversity must be from 0 to 1, got {diversity!r}", argument="diversity"
        )
    return float(diversity)


class VectorStoreBase(AsyncClosable, ABC):
    """A vector database: collections of chunk vectors, searchable and filterable by metadata.

    Reads of a missing collection return empty results; writes to one raise ValueError.

    `metadata_filter` is `{key: value}` equality on chunk metadata, a None value meaning "the
    key is absent" (how "no tenant" is scoped); implementations translate
    it to the backend's native filter and never filter in Python after an unfiltered fetch.
    Higher scores are always better. `async with store:` opens it where a store needs
    opening, and closes it (`aclose()`) on the way out.
    """

    @abstractmethod
    async def create_collection(self, name: str, dimensions: int) -> None:
        """Create collection `name` for vectors of `dimensions`; a no-op if it exists with
        the same dimensions, a ValueError if it exists with others."""

    @abstractmethod
    async def delete_collection(self, name: str) -> None:
        """Drop collection `name` and everything in it; a no-op if it does not exist."""

    @abstractmethod
    async def has_collection(self, name: str) -> bool:
        """Whether collection `name` exists."""

    async def optimize(self, collection: str) -> None:
        """Build search indexes after a bulk load; stores that index on write do nothing."""
        return None

    async def collection_dimensions(self, name: str) -> int | None:
        """The vector size of collection `name`, or None when unknown or absent."""
        return None

    @abstractmethod
    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        """Write `records`; each keeps its document id and whole chunk. Writing the same records
        again replaces them (an upsert keyed on document id and chunk index), never duplicates."""

    @abstractmethod
    async def delete(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> None:
        """Delete every chunk of `document_id` that also matches `metadata_filter`."""

    @abstractmethod
    async def search(
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[VectorSearchResult]:
        """The `top_k` nearest chunks matching `metadata_filter`, best first.

        Stores whose `search_modes` offer "sparse" or "hybrid" also take keyword arguments
        `query_text: str` and `mode`, stores with `supports_diversity` a `diversity`
        (maximal marginal relevance), stores with `supports_grouping` a `max_per_document`,
        and stores with `supports_search_filter` a `search_filter` (a `SearchFilter`, applied
        natively before ranking); they are never passed to stores that do not.
        """

    supports_diversity: bool = False
    """Whether `search` takes `diversity` (results picked by maximal marginal relevance)."""
    supports_grouping: bool = False
    """Whether `search` takes `max_per_document` and then still returns `top_k` results
    whenever that many documents match (grouped by the engine, or paged until full)."""
    supports_search_filter: bool = False
    """Whether `search` takes `search_filter` (paths, types, since, metadata ranges)."""

    async def search_modes(self, collection: str) -> tuple[SearchMode, ...]:
        """The search modes `collection` supports; dense vectors only, unless overridden."""
        return ("dense",)

    @abstractmethod
    async def list_documents(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[DocumentSummary]:
        """One summary per document matching `metadata_filter`."""

    async def document_summary(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> DocumentSummary | None:
        """The summary of `document_id` within `metadata_filter`, or None if it has no chunk.

        This default looks through `list_documents`; stores override it with a lookup of the
        one document, so code that touches one document costs the same in any collection.
        """
        for summary in await self.list_documents(collection, metadata_filter):
            if summary.document_id == document_id:
                return summary
        return None

    async def list_chunks(
        self,
        collection: str,
        document_id: str,
        offset: int = 0,
        limit: int = 30,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[Chunk]:
        """The chunks of `document_id` in `chunk_index` order, from `offset`, at most `limit`.

        Not abstract, so a store that cannot page through chunks still loads; what needs
        paging then fails with this error.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement list_chunks")

    async def chunk_window(
        self,
        collection: str,
        document_id: str,
        first: int,
        last: int,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[Chunk]:
        """The chunks of `document_id` with `first` <= chunk_index <= `last`, in order.

        This default pages with `list_chunks` (so it assumes chunks numbered 0..N-1); stores
        that can select a range of chunk indexes directly should override it.
        """
        chunks = await self.list_chunks(
            collection, document_id, max(first, 0), last - max(first, 0) + 1, metadata_filter
        )
        return [chunk for chunk in chunks if first <= chunk.chunk_index <= last]

    async def replace_document(
        self,
        collection: str,
        document_id: str,
        batches: AsyncIterable[list[VectorRecord]],
        metadata_filter: MetadataFilter | None = None,
    ) -> int:
        """Make `batches` the whole content of `document_id`; returns the chunk count written.

        Stores that can should override this so the old version stays whole until every new
        chunk is written (and the new one is removed if writing fails). This default deletes
        first, so a failure part-way leaves the document partly written.
        """
        await delete_in_scope(self, collection, document_id, metadata_filter)
        written = 0
        async for batch in batches:
            await self.insert(collection, batch)
            written += len(batch)
        return written

    async def document_generations(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
        document_id: str | None = None,
    ) -> list[GenerationInfo]:
        """Every (document, write) within `metadata_filter` with the chunk indexes it holds.

        Optional: used by `KnowledgeBase.verify`; stores that do not track writes raise
        NotImplementedError.
        """
        raise NotImplementedError(f"{type(self).__name__} does not track document generations")

    async def repair_document(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[GenerationInfo]:
        """Remove the leftovers of interrupted writes of `document_id`; returns what went.

        Optional: used by `KnowledgeBase.repair`.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot repair documents")


async def delete_in_scope(
    store: VectorStoreBase,
    collection: str,
    document_id: str,
    metadata_filter: MetadataFilter | None,
) -> None:
    """Call `store.delete` as its signature allows: the filter only when there is one, by
    keyword, so a store written as `delete(collection, document_id)` works unscoped; a scoped
    delete on such a store is a TypeError rather than a delete outside the scope."""
    if metadata_filter is None:
        await store.delete(collection, document_id)
        return
    parameters = inspect.signature(store.delete).parameters
    takes_filter = "metadata_filter" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )
    if not takes_filter:
        raise TypeError(
            f"{type(store).__name__}.delete has no metadata_filter parameter, so it cannot "
            f"delete only within {metadata_filter}; add `metadata_filter: dict | None = None`"
        )
    await store.delete(collection, document_id, metadata_filter=metadata_filter)
