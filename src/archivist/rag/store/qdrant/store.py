"""`QdrantStore`: the vector store on Qdrant, in-process (Qdrant Edge) or a server."""

from __future__ import annotations

import functools
from typing import Any

from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary, VectorSearchResult
from archivist.rag.store.base import MetadataFilter
from archivist.rag.store.capabilities import StoreCapabilities
from archivist.rag.store.core.arguments import (
    SEARCH_MODES,
    SearchMode,
    check_chunk_page,
    check_document_arguments,
    check_search,
)
from archivist.rag.store.core.generations import (
    GenerationInfo,
    repair_generations,
)
from archivist.rag.store.core.layout import (
    CHUNK_INDEX,
    DOCUMENT_ID,
    GENERATION,
    SUMMARY_FIELDS,
    TOTAL_CHUNKS,
    chunk_from,
    summary_from,
)
from archivist.rag.store.core.query import best_hits, plan_query, search_results
from archivist.rag.store.core.ranking import (
    Judged,
    rank,
)
from archivist.rag.store.file_lock import StoreLockedError
from archivist.rag.store.qdrant.backend import (
    SPARSE_VECTOR,
    ScoredPoint,
    SearchRequest,
)
from archivist.rag.store.qdrant.collections import (
    DEFAULT_QUANTIZATION,
    DEFAULT_VECTOR_DATATYPE,
    TENANT_PAYLOAD_KEY,
    QdrantCollections,
)
from archivist.rag.store.qdrant.filter import (
    AnyOf,
    Between,
    Match,
    Where,
    metadata_matches,
)
from archivist.rag.store.qdrant.hybrid import (
    chunk_of,
    document_of,
    hybrid_hits,
    judge_for,
    term_weights,
    tie_break,
)
from archivist.rag.store.qdrant.narrowing import narrowed
from archivist.rag.store.search_filter import SearchFilter
from archivist.validation import (
    check_collection_name,
    check_document_id,
    check_non_negative_int,
)

__all__ = [
    "DEFAULT_QUANTIZATION",
    "DEFAULT_VECTOR_DATATYPE",
    "TENANT_PAYLOAD_KEY",
    "QdrantStore",
    "StoreLockedError",
]


class QdrantStore(QdrantCollections):
    """Chunks and their vectors in Qdrant; higher scores are better for every distance.

    Where the data lives (exactly one of):
      - `location=":memory:"`: Qdrant Edge, Qdrant's engine in-process, in a temporary directory
        that lives as long as the store object (leaving and re-entering `async with` keeps the
        data); `path=...`: the same, persisted under `path` and locked against a second opener
        (`StoreLockedError`). One Edge shard and one `meta.json` per collection.
      - `url=...` (or an http(s) `location`), with `api_key` and `client_kwargs`: a Qdrant server
        or cluster through qdrant-client; `QdrantStore.from_client(client)` uses a client you own.

    Index policy (Edge): points are written to a small appendable segment, searched exactly
    (a scan) until it holds `auto_optimize_threshold` (default 20,000) points; then the write
    that filled it has the engine build that segment's HNSW graph, in-process. Earlier segments
    are never rebuilt, so indexing costs the same at any collection size: one optimization
    indexes one segment's points. The engine holds the GIL while it builds, so that write pauses
    the event loop for as long (seconds for 20,000 x 384-d on two cores); a smaller threshold
    makes shorter pauses and more segments. Bulk loaders wanting full write speed pass
    `auto_optimize_threshold=None` (segments of the default size, indexed only by
    `await store.optimize(collection)` at the end). A server indexes on its own; there
    `optimize` does nothing. Each open Edge collection searches its segments on
    `search_threads` engine threads (default 1: concurrent searches already use the cores,
    and a service holding many collections would otherwise start four threads per core for
    each); a single user searching a collection of many segments may want one per core.
    At most `max_open_collections` (default 256) collections keep their shard open: each maps
    files into memory, and Linux caps a process's maps, so past the bound the least recently
    used are flushed and closed, and load again on their next use.

    Layout of the collections this store creates (an existing collection keeps its own):
    `quantization="int8"` (the default; None keeps the vectors in RAM) keeps int8 copies of
    the dense vectors in RAM for the graph search and the originals on disk, read back to
    rescore the best candidates (built with each segment's index, so unindexed points are
    searched exactly on the originals). `vector_datatype="float16"` (the default; or
    "float32") stores the originals at half precision: half their memory and disk, and
    faster exact scans, for cosine similarities that move by about 1e-3. Payloads stay
    on disk either way. On a server (`url=`), the metadata key `tenant_key` (default
    "tenant_id", the key `archivist.rag.store.tenant` scopes by; None: no tenant layout) gets
    Qdrant's tenant index (`is_tenant`) and HNSW links per tenant (`payload_m=16`);
    `tenants_only=True` also drops the global graph (`m=0`), as Qdrant advises when every
    search names a tenant.

    Hybrid search: collections this store creates hold, beside each chunk's dense vector, a
    BM25 sparse vector of its text (`archivist.rag.store.core.terms`: words, CJK bigrams, whole
    identifiers and numbers; IDF computed by the engine). `search(..., query_text=...,
    mode="hybrid")` fetches the best chunks by each side in one engine call and ranks them
    together by relevance (`archivist.rag.store.core.ranking`), as every store does.
    Collections created elsewhere or before hybrid search existed stay dense-only.

    Use it inside `async with store:`, from one event loop.
    """

    SCROLL_PAGE = 1024
    """Points per page when reading many payloads."""
    capabilities = StoreCapabilities(
        search_modes=frozenset(SEARCH_MODES),
        diversity=True,
        grouping=True,
        search_filter=True,
        relevance=True,
        scoped_delete=True,
        chunk_listing=True,
        atomic_replace=True,
        generations=True,
    )
    HYBRID_DEPTH = 50
    """Candidates each side of a hybrid search fetches (at least `top_k`) to be ranked
    together by relevance. Deeper candidates change no SciFact top 10 (see
    `benchmarks/bench_search_trust.py depth`) and cost time in every search."""

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
    ) -> list[VectorSearchResult]:
        """The `top_k` best chunks within `metadata_filter` and `search_filter`, by `mode`,
        best first by relevance (`archivist.rag.store.core.ranking`):

        "dense" ranks by `query_vector` (scores are similarities); "sparse" by BM25 of
        `query_text` (scores are BM25 sums); "hybrid" takes the best chunks of both sides and
        ranks them together (scores are relevances). Sparse and hybrid need a collection with
        BM25 vectors. With `diversity` (0 = relevance only .. 1 = diversity only; dense and
        hybrid), the engine picks the hits from the candidates by maximal marginal relevance,
        and they come in the order it picked them.
        With `max_per_document`, at most that many chunks of one document.
        """
        checked = check_search(
            collection,
            query_vector,
            top_k,
            metadata_filter,
            query_text=query_text,
            mode=mode,
            diversity=diversity,
            max_per_document=max_per_document,
            search_filter=search_filter,
        )
        matches = metadata_matches(checked.metadata_filter)
        params = await self._shape(collection)
        if params is None:
            return []
        encoder = self._encoder(params) if params.sparse else None
        query = plan_query(
            collection,
            query_vector,
            query_text,
            mode,
            dimensions=params.dimensions,
            encoder=encoder,
        )
        if query is None:
            return []  # no searchable term in the query
        dense, sparse = query.dense, query.sparse
        scope = await self._indexed(collection, matches)
        if checked.search_filter is not None:
            within = await narrowed(self._open(), collection, scope, checked.search_filter)
            if within is None:
                return []
            scope = within
        query_idf: dict[int, float] = {}
        if sparse is not None:
            query_idf = await term_weights(self._open(), collection, scope, sparse, query.exact)
        judge_hit = judge_for(params, dense, sparse, query_idf)
        backend = self._open()

        async def ranked(excluded: tuple[str, ...], limit: int) -> list[Judged[ScoredPoint]]:
            where = scope
            if excluded:
                where = Where(scope.must, (*scope.must_not, AnyOf(DOCUMENT_ID, excluded)))
            if dense is not None and sparse is not None and diversity is None:
                depth = max(limit, self.HYBRID_DEPTH)
                return await hybrid_hits(
                    backend, collection, params, where, dense, sparse, query_idf, limit, depth
                )
            request = SearchRequest(
                limit=limit,
                where=where,
                dense=dense,
                sparse=sparse,
                depth=max(limit, self.HYBRID_DEPTH),
                diversity=diversity,
                # Maximal marginal relevance over both sides: each pick is judged by its
                # cosine similarity and its BM25 terms, read from its stored vectors.
                vectors=("", SPARSE_VECTOR) if query.hybrid else (),
            )
            hits = await backend.search(collection, request)
            if diversity is not None:  # in the order maximal marginal relevance picked them
                return [judge_hit(hit) for hit in hits]
            return rank(map(judge_hit, hits), tie_break)[:limit]

        found = await best_hits(ranked, document_of, tie_break, top_k, max_per_document)
        return search_results(found, query, document_of, chunk_of)

    async def query_term_weights(
        self, collection: str, query_text: str, metadata_filter: MetadataFilter | None = None
    ) -> dict[int, float]:
        """The IDF of each BM25 term of `query_text` the lexical evidence of a search within
        `metadata_filter` weighs (`ranking.query_weights`)."""
        check_collection_name(collection)
        matches = metadata_matches(metadata_filter)
        params = await self._shape(collection)
        if params is None or not params.sparse or not query_text:
            return {}
        encoder = self._encoder(params)
        sparse = encoder.query(query_text)
        if not sparse.indices:
            return {}
        scope = await self._indexed(collection, matches)
        exact = frozenset(encoder.exact(query_text))
        return await term_weights(self._open(), collection, scope, sparse, exact)

    async def list_documents(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[DocumentSummary]:
        """One summary per document (by id), counting its chunks within `metadata_filter`."""
        check_collection_name(collection)
        matches = metadata_matches(metadata_filter)
        if await self._shape(collection) is None:
            return []
        scope = await self._indexed(collection, matches)
        backend = self._open()
        total = await backend.count(collection, scope)
        if total == 0:
            return []
        counts = await backend.facet(collection, DOCUMENT_ID, scope, limit=total)
        firsts: dict[str, dict[str, Any]] = {}
        first_chunks = scope.also(Match(CHUNK_INDEX, 0))
        async for page in backend.scroll(
            collection, first_chunks, SUMMARY_FIELDS, self.SCROLL_PAGE
        ):
            for stored in page:
                firsts.setdefault(stored[DOCUMENT_ID], stored)
        for document_id in sorted(counts.keys() - firsts.keys()):
            # A document written without a chunk 0: summarise it from its lowest chunk.
            lowest = await backend.scroll_ordered(
                collection, scope.also(Match(DOCUMENT_ID, document_id)), CHUNK_INDEX, 1
            )
            firsts[document_id] = lowest[0]
        return [
            summary_from(firsts[document_id], counts[document_id]) for document_id in sorted(counts)
        ]

    async def document_summary(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> DocumentSummary | None:
        """One document's summary from two indexed lookups: its chunk count, and its lowest
        chunk's payload; the other documents are never read."""
        matches = metadata_matches(
            check_document_arguments(collection, document_id, metadata_filter)
        )
        if await self._shape(collection) is None:
            return None
        scope = (await self._indexed(collection, matches)).also(Match(DOCUMENT_ID, document_id))
        backend = self._open()
        count = await backend.count(collection, scope)
        if count == 0:
            return None
        first = await backend.scroll_ordered(collection, scope, CHUNK_INDEX, 1)
        return summary_from(first[0], count) if first else None

    async def list_chunks(
        self,
        collection: str,
        document_id: str,
        offset: int = 0,
        limit: int = 30,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[Chunk]:
        matches = metadata_matches(
            check_chunk_page(collection, document_id, offset, limit, metadata_filter)
        )
        if await self._shape(collection) is None or limit == 0:
            return []
        scope = await self._indexed(collection, matches)
        stored = await self._open().scroll_ordered(
            collection, scope.also(Match(DOCUMENT_ID, document_id)), CHUNK_INDEX, offset + limit
        )
        return [chunk_from(payload) for payload in stored[offset:]]

    async def chunk_window(
        self,
        collection: str,
        document_id: str,
        first: int,
        last: int,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[Chunk]:
        """The chunks of `document_id` indexed `first`..`last`: one range condition on the
        indexed `chunk_index`, so a window deep in a long document reads only its chunks."""
        check_collection_name(collection)
        check_document_id(document_id)
        check_non_negative_int(first, "first")
        check_non_negative_int(last, "last")
        matches = metadata_matches(metadata_filter)
        if await self._shape(collection) is None or last < first:
            return []
        scope = await self._indexed(collection, matches)
        window = scope.also(
            Match(DOCUMENT_ID, document_id), Between(CHUNK_INDEX, gte=first, lte=last)
        )
        stored = await self._open().scroll_ordered(
            collection, window, CHUNK_INDEX, last - first + 1
        )
        return [chunk_from(payload) for payload in stored]

    async def document_generations(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
        document_id: str | None = None,
    ) -> list[GenerationInfo]:
        """Every (document, generation) within `metadata_filter` with the chunk indexes it holds;
        a full scan of the chunk headers (no content), for `KnowledgeBase.verify`."""
        check_collection_name(collection)
        if document_id is not None:
            check_document_id(document_id)
        matches = metadata_matches(metadata_filter)
        if await self._shape(collection) is None:
            return []
        scope = await self._indexed(collection, matches)
        if document_id is not None:
            scope = scope.also(Match(DOCUMENT_ID, document_id))
        return await self._generations(collection, scope)

    async def _generations(self, collection: str, scope: Where) -> list[GenerationInfo]:
        found: dict[tuple[str, str], tuple[list[int], set[int]]] = {}
        fields = (DOCUMENT_ID, GENERATION, CHUNK_INDEX, TOTAL_CHUNKS)
        async for page in self._open().scroll(collection, scope, fields, self.SCROLL_PAGE):
            for stored in page:
                key = (str(stored[DOCUMENT_ID]), str(stored.get(GENERATION, "")))
                indexes, totals = found.setdefault(key, ([], set()))
                indexes.append(int(stored[CHUNK_INDEX]))
                totals.add(int(stored[TOTAL_CHUNKS]))
        return [
            GenerationInfo(
                document_id=document_id,
                generation=generation,
                chunk_indexes=sorted(indexes),
                total_chunks=sorted(totals),
            )
            for (document_id, generation), (indexes, totals) in sorted(found.items())
        ]

    async def repair_document(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[GenerationInfo]:
        """Make `document_id` (within `metadata_filter`) whole again; returns what was removed.

        Holds the document's lock, so a write of it in flight in this store finishes first and
        is never mistaken for a leftover. See `generations.repair_plan` for what is kept.
        """
        matches = metadata_matches(
            check_document_arguments(collection, document_id, metadata_filter)
        )
        if await self._shape(collection) is None:
            return []
        scope = (await self._indexed(collection, matches)).also(Match(DOCUMENT_ID, document_id))

        async def remove(stale: GenerationInfo) -> None:
            await self._open().delete(collection, scope.also(Match(GENERATION, stale.generation)))

        return await repair_generations(
            lock=self._document_locks.hold((collection, document_id)),
            generations=functools.partial(self._generations, collection, scope),
            remove=remove,
        )
