"""`KnowledgeBase`: an embedding model, a vector store and a collection bound into one handle.

The handle checks its arguments and delegates: writing to `writing`, search planning to
`searching`, whole-document checks to `integrity`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from archivist.errors import ConfigurationError, DocumentNotFoundError, InvalidArgumentError
from archivist.rag.document import Chunk
from archivist.rag.knowledge import integrity, query_cache
from archivist.rag.knowledge.integrity import IncompleteDocument, RepairReport, VerifyReport
from archivist.rag.knowledge.searching import Query, Searcher
from archivist.rag.knowledge.vocabulary import UNREADABLE_SHARE, UnreadableWarnings
from archivist.rag.knowledge.writing import DocumentWriter, NewDocument, WriteProgress
from archivist.rag.record import DocumentSummary, VectorSearchResult
from archivist.rag.store.base import (
    MetadataFilter,
    SearchMode,
    VectorStoreBase,
    delete_in_scope,
    require_scoped_delete,
)
from archivist.rag.store.search_filter import SearchFilter
from archivist.validation import (
    check_document_id,
    check_limit,
    check_metadata_filter,
    check_non_negative_int,
    check_positive_int,
)

if TYPE_CHECKING:
    from archivist.embedding import EmbeddingModelBase

__all__ = [
    "UNREADABLE_SHARE",
    "DocumentNotFoundError",
    "IncompleteDocument",
    "KnowledgeBase",
    "NewDocument",
    "Query",
    "RepairReport",
    "VerifyReport",
    "WriteProgress",
]


class KnowledgeBase:
    """A named, described knowledge base over `collection` in `vector_store`.

    The handle never opens or closes the store: hold `async with store:` around its use.
    With a `metadata_filter` the handle only ever reads, lists and deletes records matching
    it, and stamps it onto every chunk it writes, so tenants can share one collection; a None
    value scopes the handle to records without that key (and strips the key on write).
    """

    def __init__(
        self,
        name: str,
        description: str,
        embedding_model: EmbeddingModelBase,
        vector_store: VectorStoreBase,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
        *,
        write_batch_size: int = 256,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise InvalidArgumentError("name must be a non-empty string", argument="name")
        if not isinstance(collection, str) or not collection:
            raise InvalidArgumentError(
                "collection must be a non-empty string", argument="collection"
            )
        if not isinstance(vector_store, VectorStoreBase):
            raise TypeError("vector_store must be a VectorStoreBase")
        check_positive_int(write_batch_size, "write_batch_size")
        self.name = name
        self.description = description
        self.embedding_model = embedding_model
        self.vector_store = vector_store
        self.collection = collection
        self.metadata_filter = check_metadata_filter(metadata_filter)
        self.write_batch_size = write_batch_size
        self._ready = False
        self._ready_lock = asyncio.Lock()
        self._writer = DocumentWriter(self, UnreadableWarnings(embedding_model))
        self._searcher = Searcher(self)

    def __repr__(self) -> str:
        return (
            f"KnowledgeBase(name={self.name!r}, collection={self.collection!r}, "
            f"metadata_filter={self.metadata_filter!r})"
        )

    async def ensure_collection(self) -> None:
        """Create the collection with the model's dimensions, or check an existing one's."""
        if self._ready:
            return
        async with self._ready_lock:
            if not await self._checked_collection():
                await self.vector_store.create_collection(
                    self.collection, self.embedding_model.dimensions
                )
                self._ready = True

    @asynccontextmanager
    async def bulk_load(self) -> AsyncIterator[None]:
        """Hold around a large write (the first indexing of a knowledge base): the store
        builds once at the block's end what it would otherwise keep up chunk by chunk
        (`VectorStoreBase.bulk_load`). Searches meanwhile stay correct; on a large collection
        of a store that defers its vector index (PostgreSQL), slower."""
        await self.ensure_collection()
        async with self.vector_store.bulk_load(self.collection):
            yield

    async def has_collection(self) -> bool:
        """Whether the collection exists, its dimensions checked against the model's; never
        creates it (a search of a knowledge base that has none finds nothing)."""
        if self._ready:
            return True
        async with self._ready_lock:
            return await self._checked_collection()

    async def _checked_collection(self) -> bool:
        """`has_collection`'s check; callers hold `_ready_lock`."""
        if self._ready:
            return True
        if not await self.vector_store.has_collection(self.collection):
            return False
        dimensions = self.embedding_model.dimensions
        existing = await self.vector_store.collection_dimensions(self.collection)
        if existing is not None and existing != dimensions:
            raise ConfigurationError(
                f"collection {self.collection!r} holds {existing}-d vectors but "
                f"{self.embedding_model.model!r} makes {dimensions}-d vectors; use "
                f"another collection or the model the collection was built with",
                setting="embedding_model",
            )
        self._ready = True
        return True

    async def insert_document(
        self,
        chunks: Sequence[Chunk] | AsyncIterable[Chunk],
        document_id: str | None = None,
        document_metadata: dict[str, Any] | None = None,
    ) -> str:
        """Embed `chunks` and store them as one document; returns its id.

        Chunk metadata = `document_metadata` ∪ chunk metadata ∪ `metadata_filter` (the filter
        wins). Re-inserting an existing id replaces that document whole. Text-only models
        skip DataBlock chunks of a list (logged) and the rest are renumbered. `chunks` may be
        an async iterable (see `insert_documents`).
        """
        (inserted,) = await self.insert_documents(
            [NewDocument(chunks, document_id, document_metadata)]
        )
        return inserted

    @query_cache.invalidates
    async def insert_documents(
        self,
        documents: Iterable[NewDocument] | AsyncIterable[NewDocument],
        *,
        on_progress: WriteProgress | None = None,
    ) -> list[str]:
        """Insert documents; returns their ids in order. The one write path of the library.

        Small documents are packed so their chunks share full-size embedding calls of
        `write_batch_size` chunks; a document of at least that many chunks, or whose chunks
        come as an async iterable (numbered with their final `total_chunks`), is embedded and
        written batch by batch, so at most about two batches of vectors are held at a time.
        Each document replaces its old version whole or not at all (the store keeps the old
        version until the new one is complete); a failure stops the call and the documents of
        earlier batches stay written. `documents` is consumed lazily. `on_progress(document_id,
        chunks_written)` is called after each batch a document writes.
        """
        return await self._writer.write(documents, on_progress)

    async def search(
        self,
        queries: Sequence[Query] | Query,
        top_k: int = 5,
        score_threshold: float | None = None,
        *,
        mode: SearchMode | None = None,
        max_per_document: int | None = None,
        diversity: float | None = None,
        search_filter: SearchFilter | Mapping[str, Any] | None = None,
        context: int = 0,
        min_relevance: float | None = None,
        collapse_duplicates: bool = True,
    ) -> list[VectorSearchResult]:
        """Best chunks for `queries`, each searched on its own, then thresholded, deduplicated
        by (document, chunk) and cut to `top_k`, best first: by relevance (where the store
        gives it; else by score), which never rises down the list.

        Hits of the same text (white space aside) from different places, such as one file
        indexed under two paths, come back as one hit, the best copy, whose `also_in` lists
        the others; `top_k` distinct texts still come back when that many match (deeper pages
        are fetched). `collapse_duplicates=False` returns every copy as its own hit.

        `mode` is "hybrid" (the best chunks by dense vectors and by BM25, ranked together in
        the store), "dense" or "sparse"; by default hybrid where the collection supports it,
        and dense when `score_threshold` is given (a similarity threshold). DataBlock queries
        always search the dense side. By default a document shows its best hit before any
        document shows a second, among hits of relevance at least 0.25 (`SPREAD_FLOOR`), so
        one long file cannot fill every slot while other documents are relevant.
        `max_per_document` is a hard cap instead (`top_k` lifts the default spreading);
        `top_k` hits still come back when that many documents match. `diversity` (0..1,
        stores declaring `capabilities.diversity`) has the store pick the hits by maximal
        marginal relevance; they are shown by relevance. `search_filter` (a `SearchFilter` or
        its dict form: `paths`, `types`, `since`, `where`) narrows the search inside the
        store, before ranking. With `context` N (up to 10), each hit carries in `context` the
        chunks from N before to N after it; hits of one document whose windows overlap are
        merged into the better one (so fewer than `top_k` may come back).
        `context.context_text` joins them. Every hit of a store that can tell carries
        `relevance`, the estimated probability that it is relevant (0..1, comparable across
        queries, modes and languages); `min_relevance` drops hits below it (hits of a store
        that gives none are kept), so an empty list means nothing relevant was found.
        """
        return await self._searcher.search(
            queries,
            top_k,
            score_threshold,
            mode=mode,
            max_per_document=max_per_document,
            diversity=diversity,
            search_filter=search_filter,
            context=context,
            min_relevance=min_relevance,
            collapse_duplicates=collapse_duplicates,
        )

    async def list_documents(self) -> list[DocumentSummary]:
        """One summary per document in scope; `source` and `metadata` from its chunk 0."""
        if not await self.has_collection():
            return []
        return await self.vector_store.list_documents(self.collection, self.metadata_filter)

    async def get_document(self, document_id: str) -> DocumentSummary | None:
        """The summary of `document_id` in scope, or None; reads that document alone."""
        document_id = check_document_id(document_id)
        if not await self.has_collection():
            return None
        return await self.vector_store.document_summary(
            self.collection, document_id, self.metadata_filter
        )

    async def list_chunks(self, document_id: str, offset: int = 0, limit: int = 30) -> list[Chunk]:
        """A page of `document_id`'s chunks in `chunk_index` order."""
        document_id = check_document_id(document_id)
        check_non_negative_int(offset, "offset")
        check_limit(limit)
        self._require(self.vector_store.capabilities.chunk_listing, "chunk_listing", "list chunks")
        if not await self.has_collection():
            return []
        return await self.vector_store.list_chunks(
            self.collection, document_id, offset, limit, self.metadata_filter
        )

    @query_cache.invalidates
    async def delete_document(self, document_id: str) -> None:
        """Remove every chunk of `document_id` in scope; absent → DocumentNotFoundError."""
        document_id = check_document_id(document_id)
        require_scoped_delete(self.vector_store, self.metadata_filter)
        if await self.get_document(document_id) is None:
            raise DocumentNotFoundError(
                f"no document {document_id!r} in knowledge base {self.name!r}",
                document_id=document_id,
                knowledge_base=self.name,
            )
        await delete_in_scope(self.vector_store, self.collection, document_id, self.metadata_filter)

    async def verify(self) -> VerifyReport:
        """Check that every document in scope is whole: chunks 0..N-1 once each, N agreeing
        with every chunk's `total_chunks`, and no older version beside a newer one.

        A process killed while writing (SIGKILL, power loss) can leave a partial document or,
        mid re-insert, the old version beside part of the new one; `list_documents` and
        `search` show such leftovers as they are, so run `verify` (and `repair`) after a crash.
        A write still in flight shows up as incomplete too. A full scan of chunk headers.
        """
        self._require(
            self.vector_store.capabilities.generations, "generations", "track document generations"
        )
        await self.ensure_collection()
        return await integrity.verify(self.vector_store, self.collection, self.metadata_filter)

    @query_cache.invalidates
    async def repair(self) -> RepairReport:
        """Remove the leftovers `verify` reports, within this handle's scope.

        Per incomplete document the newest complete version is kept (the old one when a
        re-insert was cut short) and every other write of it is deleted; a document with no
        complete version (its first insert was cut short) is deleted whole: insert it again.
        A handle without `metadata_filter` on a collection that tenants share treats equal
        document ids of different tenants as one document (as `list_documents` does): repair
        through each tenant's handle there.
        """
        self._require(
            self.vector_store.capabilities.generations, "generations", "track document generations"
        )
        await self.ensure_collection()
        return await integrity.repair(self.vector_store, self.collection, self.metadata_filter)

    def _require(self, declared: bool, capability: str, what: str) -> None:
        """NotImplementedError naming the store unless it declares `capability`."""
        if not declared:
            name = type(self.vector_store).__name__
            raise NotImplementedError(
                f"{name} does not {what}: it does not declare "
                f"`capabilities = StoreCapabilities({capability}=True)`"
            )
