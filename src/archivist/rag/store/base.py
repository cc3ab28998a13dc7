"""`VectorStoreBase`: the contract every vector store implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, ClassVar, Final

from archivist._util.closable import AsyncClosable
from archivist.embedding.relevance import RelevanceCurves
from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary, VectorRecord, VectorSearchResult
from archivist.rag.store.capabilities import StoreCapabilities
from archivist.rag.store.core.arguments import SEARCH_MODES as SEARCH_MODES
from archivist.rag.store.core.arguments import SearchMode as SearchMode
from archivist.rag.store.core.arguments import check_diversity as check_diversity
from archivist.rag.store.core.arguments import check_document_arguments, check_records
from archivist.rag.store.core.arguments import check_search_mode as check_search_mode
from archivist.rag.store.core.generations import GenerationInfo
from archivist.rag.store.keyed_lock import KeyedLocks
from archivist.rag.store.search_filter import SearchFilter
from archivist.validation import MetadataFilter as MetadataFilter

_FORMER_DECLARATIONS = {
    "supports_diversity": "diversity",
    "supports_grouping": "grouping",
    "supports_search_filter": "search_filter",
}
"""Class attributes of earlier releases, now fields of `StoreCapabilities`."""

STORE_METHODS: Final = (
    "create_collection",
    "delete_collection",
    "has_collection",
    "optimize",
    "begin_bulk_load",
    "end_bulk_load",
    "collection_dimensions",
    "insert",
    "delete",
    "search",
    "search_modes",
    "term_layout",
    "list_documents",
    "document_summary",
    "list_chunks",
    "chunk_window",
    "replace_document",
    "document_generations",
    "repair_document",
)
"""The contract's methods: every public coroutine method of `VectorStoreBase`, in order.
Code that stands in for a store (`ProcessStore`) forwards these."""


class VectorStoreBase(AsyncClosable, ABC):
    """A vector database: collections of chunk vectors, searchable and filterable by metadata.

    Reads of a missing collection return empty results; writes to one raise ValueError.

    `metadata_filter` is `{key: value}` equality on chunk metadata, a None value meaning "the
    key is absent" (how "no tenant" is scoped); implementations translate
    it to the backend's native filter and never filter in Python after an unfiltered fetch.
    Higher scores are always better. `async with store:` opens it where a store needs
    opening, and closes it (`aclose()`) on the way out.

    `capabilities` declares what the store offers beyond the minimal contract (see
    `StoreCapabilities`); the knowledge base reads it and asks for nothing undeclared. The
    defaults describe AgentScope's custom-store skeleton, so such a store works unchanged.
    `archivist.rag.store.core.arguments` has the argument checks each method starts with.
    """

    capabilities: ClassVar[StoreCapabilities] = StoreCapabilities()
    """What this store class offers; override it as a class attribute."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse a class whose declaration would be misread: `capabilities` of another type,
        or the attributes stores declared with before `StoreCapabilities`."""
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("capabilities", StoreCapabilities())
        if not isinstance(declared, StoreCapabilities):
            raise TypeError(
                f"{cls.__name__}.capabilities must be a StoreCapabilities, "
                f"not {type(declared).__name__}"
            )
        for old, field in _FORMER_DECLARATIONS.items():
            if old in cls.__dict__:
                raise TypeError(
                    f"{cls.__name__}.{old} is not read any more: declare "
                    f"`capabilities = StoreCapabilities({field}=True)` instead"
                )

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

    async def begin_bulk_load(self, collection: str) -> None:
        """Get `collection` ready for a large write: a store whose index costs more to keep up
        row by row than to build once drops it here (searches stay correct, ranked without
        it); this default does nothing. `end_bulk_load` ends it; prefer `bulk_load`."""
        return None

    async def end_bulk_load(self, collection: str) -> None:
        """End a bulk load of `collection`: build what `begin_bulk_load` dropped, then what
        `optimize` builds. Safe to call twice, or from another process loading the same
        collection."""
        await self.optimize(collection)

    @asynccontextmanager
    async def bulk_load(self, collection: str) -> AsyncIterator[None]:
        """`begin_bulk_load`, the block's writes, then `end_bulk_load`, also when the block
        fails (an error of the end is then dropped for the block's own). A block cancelled
        or interrupted is left without its end, which can take long: the next `optimize`
        or `end_bulk_load` builds what is missing."""
        await self.begin_bulk_load(collection)
        try:
            yield
        except Exception:
            with suppress(Exception):
                await self.end_bulk_load(collection)
            raise
        await self.end_bulk_load(collection)

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
        """Delete every chunk of `document_id` that also matches `metadata_filter`.

        Called with a `metadata_filter` only when `capabilities.scoped_delete` is declared, so
        the minimal store's `delete` may take just `collection` and `document_id`.
        """

    @abstractmethod
    async def search(
        self,
        collection: str,
        query_vector: list[float] | None,
        top_k: int = 5,
        metadata_filter: MetadataFilter | None = None,
        *,
        query_text: str | None = None,
        mode: SearchMode = "dense",
        diversity: float | None = None,
        max_per_document: int | None = None,
        search_filter: SearchFilter | None = None,
        relevance_curves: RelevanceCurves | None = None,
    ) -> list[VectorSearchResult]:
        """The `top_k` best chunks matching `metadata_filter`, best first (a store declaring
        `relevance` lists them by relevance, which never rises down the list;
        `archivist.rag.store.core.ranking` computes it as the shipped stores do, by
        `relevance_curves`: those of the query's embedding model and script, which a
        knowledge base passes; the default model's when None).

        `mode` "dense" ranks by `query_vector`; "sparse" by BM25 of `query_text` (no vector
        needed); "hybrid" ranks the best of both together. `diversity` (0..1) picks results
        by maximal marginal relevance (in the order picked), `max_per_document` caps the
        chunks of one document, and `search_filter` narrows the search natively before
        ranking.

        The keyword arguments belong to the store's declared `capabilities`: a store declaring
        any search capability takes them all (`StoreCapabilities.search_options`) and is given
        `query_text` whenever the query has text; a store declaring none (the minimal store)
        is only ever called with the first four, so its `search` may define just those.
        """

    async def search_modes(self, collection: str) -> tuple[SearchMode, ...]:
        """The search modes `collection` offers: by default every declared one; stores whose
        older collections lack sparse vectors override this."""
        return self.capabilities.ordered_modes()

    async def term_layout(self, collection: str) -> int | None:
        """The term layout `collection`'s BM25 terms were written with
        (`archivist.rag.store.core.terms`), or None when it has none or the store does not say.
        A layout older than `TERM_LAYOUT` still works, by its own rules, until rebuilt."""
        return None

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

        Stores declaring `capabilities.chunk_listing` implement it; the minimal store does not.
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
        """Make `batches` the whole content of `document_id` (within `metadata_filter`);
        returns the chunk count written. Records of another document, outside the filter,
        repeated or with a bad vector are refused, and the old version is left whole.

        This default, built on `delete` and `insert`, first takes in and checks every batch,
        holding the whole new version in memory, so a failing batch source or a bad record
        leaves the old version untouched; then it deletes the old version and inserts the new
        one (one replacement of a document at a time in this store object). A failure of the
        store between those two steps loses the document: stores that can write the new
        version beside the old override this and declare `capabilities.atomic_replace`.
        """
        scope = check_document_arguments(collection, document_id, metadata_filter)
        require_scoped_delete(self, scope)
        dimensions = await self.collection_dimensions(collection)
        records: list[VectorRecord] = []
        seen: set[tuple[str, int]] = set()
        async for batch in batches:
            check_records(
                batch, dimensions, document_id=document_id, metadata_filter=scope, seen=seen
            )
            if dimensions is None and batch:
                dimensions = len(batch[0].vector)
            records.extend(batch)
        async with _replace_locks(self).hold((collection, document_id)):
            await delete_in_scope(self, collection, document_id, scope)
            if records:
                await self.insert(collection, records)
        return len(records)

    async def document_generations(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
        document_id: str | None = None,
    ) -> list[GenerationInfo]:
        """Every (document, write) within `metadata_filter` with the chunk indexes it holds.

        Stores declaring `capabilities.generations` implement it, for `KnowledgeBase.verify`.
        """
        raise NotImplementedError(f"{type(self).__name__} does not track document generations")

    async def repair_document(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[GenerationInfo]:
        """Remove the leftovers of interrupted writes of `document_id`; returns what went.

        Stores declaring `capabilities.generations` implement it, for `KnowledgeBase.repair`.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot repair documents")


def require_scoped_delete(store: VectorStoreBase, metadata_filter: MetadataFilter | None) -> None:
    """TypeError unless `store` can delete within `metadata_filter` (always, without one)."""
    if metadata_filter is not None and not store.capabilities.scoped_delete:
        name = type(store).__name__
        raise TypeError(
            f"{name}.delete has no metadata_filter parameter, so it cannot delete only "
            f"within {metadata_filter}: a knowledge base with a metadata_filter cannot write "
            f"or delete in it. Add `metadata_filter: dict | None = None` to {name}.delete and "
            "declare `capabilities = StoreCapabilities(scoped_delete=True)`"
        )


async def delete_in_scope(
    store: VectorStoreBase,
    collection: str,
    document_id: str,
    metadata_filter: MetadataFilter | None,
) -> None:
    """Delete `document_id` within `metadata_filter`, as the store's capabilities allow: the
    filter only when there is one, by keyword; a scoped delete on a store without
    `scoped_delete` is a TypeError rather than a delete outside the scope."""
    if metadata_filter is None:
        await store.delete(collection, document_id)
        return
    require_scoped_delete(store, metadata_filter)
    await store.delete(collection, document_id, metadata_filter=metadata_filter)


def _replace_locks(store: VectorStoreBase) -> KeyedLocks:
    """The per-document locks of the default `replace_document`, made on first use (a
    subclass need not call the base's `__init__`)."""
    locks = store.__dict__.get("_archivist_replace_locks")
    if not isinstance(locks, KeyedLocks):
        locks = KeyedLocks()
        store.__dict__["_archivist_replace_locks"] = locks
    return locks
