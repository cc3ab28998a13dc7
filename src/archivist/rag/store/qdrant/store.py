"""`QdrantStore`: the vector store on Qdrant, in-process (Qdrant Edge) or a server."""

from __future__ import annotations

from typing import Any

from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary
from archivist.rag.store.capabilities import StoreCapabilities
from archivist.rag.store.core.arguments import SEARCH_MODES, SearchArguments
from archivist.rag.store.core.generations import GenerationInfo
from archivist.rag.store.core.layout import (
    CHUNK_INDEX,
    DOCUMENT_ID,
    GENERATION,
    SUMMARY_FIELDS,
    TOTAL_CHUNKS,
    chunk_from,
    summary_from,
)
from archivist.rag.store.core.query import Query, Ranked
from archivist.rag.store.core.ranking import Judged, rank
from archivist.rag.store.core.shaped import CollectionShape
from archivist.rag.store.file_lock import StoreLockedError
from archivist.rag.store.qdrant.backend import SPARSE_VECTOR, ScoredPoint, SearchRequest
from archivist.rag.store.qdrant.collections import (
    DEFAULT_QUANTIZATION,
    DEFAULT_VECTOR_DATATYPE,
    TENANT_PAYLOAD_KEY,
    QdrantCollections,
)
from archivist.rag.store.qdrant.filter import AnyOf, Between, Match, Where
from archivist.rag.store.qdrant.hybrid import (
    chunk_of,
    document_of,
    hybrid_hits,
    judge_for,
    term_weights,
    tie_break,
)
from archivist.rag.store.qdrant.narrowing import narrowed
from archivist.validation import MetadataFilter, check_collection_name, check_metadata_filter

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
    rescore twice as many candidates as asked for, so hits and scores are the originals'
    (built with each segment's index, so unindexed points are searched exactly on the
    originals). `vector_datatype="float16"` (the default; or
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

    async def _ranker(
        self,
        collection: str,
        shape: CollectionShape,
        scope: Where,
        query: Query,
        search: SearchArguments,
    ) -> Ranked[ScoredPoint] | None:
        """Hits ranked by the engine's query (narrowed natively by the search filter), judged
        from the vectors stored with them; a hybrid search ranks both sides' candidates."""
        if search.search_filter is not None:
            within = await narrowed(self._open(), collection, scope, search.search_filter)
            if within is None:
                return None
            scope = within
        dense, sparse, diversity = query.dense, query.sparse, search.diversity
        query_idf: dict[int, float] = {}
        if sparse is not None:
            terms = await term_weights(self._open(), collection, scope, sparse)
            query_idf, sparse = terms.weights, terms.sparse
        curves = search.relevance_curves
        judge_hit = judge_for(shape, dense, sparse, query_idf, curves)
        backend = self._open()

        async def ranked(excluded: tuple[str, ...], limit: int) -> list[Judged[ScoredPoint]]:
            where = scope
            if excluded:
                where = Where(scope.must, (*scope.must_not, AnyOf(DOCUMENT_ID, excluded)))
            depth = max(limit, self.HYBRID_DEPTH)
            if dense is not None and sparse is not None and diversity is None:
                return await hybrid_hits(
                    backend,
                    collection,
                    shape,
                    where,
                    dense,
                    sparse,
                    query_idf,
                    limit,
                    depth,
                    curves,
                )
            request = SearchRequest(
                limit=limit,
                where=where,
                dense=dense,
                sparse=sparse,
                depth=depth,
                diversity=diversity,
                # Maximal marginal relevance over both sides: each pick is judged by its
                # cosine similarity and its BM25 terms, read from its stored vectors.
                vectors=("", SPARSE_VECTOR) if query.hybrid else (),
            )
            hits = await backend.search(collection, request)
            if diversity is not None:  # in the order maximal marginal relevance picked them
                return [judge_hit(hit) for hit in hits]
            return rank(map(judge_hit, hits), tie_break)[:limit]

        return ranked

    def _document_of(self, hit: ScoredPoint) -> str:
        return document_of(hit)

    def _tie_break(self, hit: ScoredPoint) -> tuple[str, ...]:
        return tie_break(hit)

    def _chunk_of(self, hit: ScoredPoint) -> Chunk:
        return chunk_of(hit)

    async def query_term_weights(
        self, collection: str, query_text: str, metadata_filter: MetadataFilter | None = None
    ) -> dict[int, float]:
        """The IDF of each BM25 term of `query_text` the lexical evidence of a search within
        `metadata_filter` weighs (`ranking.query_weights`)."""
        check_collection_name(collection)
        checked = check_metadata_filter(metadata_filter)
        shape = await self._shape(collection)
        if shape is None or not shape.sparse or not query_text:
            return {}
        encoder = self._encoder(shape)
        sparse = encoder.query(query_text)
        if not sparse.indices:
            return {}
        scope = await self._scope(collection, checked)
        return (await term_weights(self._open(), collection, scope, sparse)).weights

    async def _summaries(
        self, collection: str, shape: CollectionShape, scope: Where
    ) -> list[DocumentSummary]:
        """Chunk counts per document from one facet, and each document's chunk 0."""
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

    async def _summary(
        self, collection: str, shape: CollectionShape, scope: Where, document_id: str
    ) -> DocumentSummary | None:
        """Two indexed lookups: the chunk count, and the lowest chunk's payload."""
        scope = scope.also(Match(DOCUMENT_ID, document_id))
        backend = self._open()
        count = await backend.count(collection, scope)
        if count == 0:
            return None
        first = await backend.scroll_ordered(collection, scope, CHUNK_INDEX, 1)
        return summary_from(first[0], count) if first else None

    async def _chunk_page(
        self,
        collection: str,
        shape: CollectionShape,
        scope: Where,
        document_id: str,
        offset: int,
        limit: int,
    ) -> list[Chunk]:
        stored = await self._open().scroll_ordered(
            collection, scope.also(Match(DOCUMENT_ID, document_id)), CHUNK_INDEX, offset + limit
        )
        return [chunk_from(payload) for payload in stored[offset:]]

    async def _chunk_range(
        self,
        collection: str,
        shape: CollectionShape,
        scope: Where,
        document_id: str,
        first: int,
        last: int,
    ) -> list[Chunk]:
        window = scope.also(
            Match(DOCUMENT_ID, document_id), Between(CHUNK_INDEX, gte=first, lte=last)
        )
        stored = await self._open().scroll_ordered(
            collection, window, CHUNK_INDEX, last - first + 1
        )
        return [chunk_from(payload) for payload in stored]

    async def _generations(
        self, collection: str, shape: CollectionShape, scope: Where, document_id: str | None
    ) -> list[GenerationInfo]:
        """A scan of the chunk headers within `scope`."""
        if document_id is not None:
            scope = scope.also(Match(DOCUMENT_ID, document_id))
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
