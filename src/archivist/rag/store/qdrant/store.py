"""`QdrantStore`: the vector store on Qdrant, in-process (Qdrant Edge) or a server."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import math
import os
from collections.abc import AsyncIterable, Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from archivist._util.extras import require
from archivist._util.off_loop import off_loop
from archivist.errors import InvalidArgumentError
from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary, VectorRecord, VectorSearchResult
from archivist.rag.store.base import MetadataFilter, VectorStoreBase
from archivist.rag.store.capabilities import StoreCapabilities
from archivist.rag.store.core.arguments import (
    SEARCH_MODES,
    SearchMode,
    check_chunk_page,
    check_document_arguments,
    check_search,
)
from archivist.rag.store.core.bm25 import Bm25Encoder, SparseVector, TermCounts
from archivist.rag.store.core.distance import check_distance, higher_is_better
from archivist.rag.store.core.generations import (
    GenerationInfo,
    discard_noting,
    new_generation,
    repair_generations,
    write_generation,
)
from archivist.rag.store.core.layout import (
    CHUNK_INDEX,
    DOCUMENT_ID,
    GENERATION,
    SOURCE,
    SUMMARY_FIELDS,
    TOTAL_CHUNKS,
    chunk_from,
    summary_from,
)
from archivist.rag.store.core.points import PointWrite, points_for
from archivist.rag.store.core.query import best_hits, plan_query, search_results
from archivist.rag.store.core.ranking import (
    Judged,
    cosine,
    judge,
    lexical,
    lexical_evidence,
    query_weights,
    rank,
)
from archivist.rag.store.core.terms import TERM_LAYOUT
from archivist.rag.store.file_lock import StoreLockedError
from archivist.rag.store.keyed_lock import KeyedLocks
from archivist.rag.store.qdrant.backend import (
    INTERNAL_INDEXES,
    SPARSE_VECTOR,
    VECTOR_DATATYPES,
    CollectionParams,
    QdrantBackend,
    Quantization,
    ScoredPoint,
    SearchRequest,
    StoreLayout,
    VectorDatatype,
)
from archivist.rag.store.qdrant.edge.backend import EdgeBackend
from archivist.rag.store.qdrant.edge.collection import SEARCH_THREADS
from archivist.rag.store.qdrant.edge.open_shards import MAX_OPEN_COLLECTIONS
from archivist.rag.store.qdrant.edge.optimizer import SEGMENT_POINTS
from archivist.rag.store.qdrant.filter import (
    Absent,
    AnyOf,
    Between,
    Condition,
    Either,
    HasId,
    IndexKind,
    Match,
    Where,
    index_kind,
    metadata_matches,
    metadata_path,
)
from archivist.rag.store.search_filter import (
    INDEXED_AT_KEY,
    MODIFIED_KEY,
    PATH_KEY,
    Range,
    SearchFilter,
)
from archivist.validation import (
    check_collection_name,
    check_document_id,
    check_non_negative_int,
    check_positive_int,
)

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient

__all__ = ["QdrantStore", "StoreLockedError"]

DEFAULT_QUANTIZATION: Quantization | None = "int8"
"""New collections quantize their vectors unless told otherwise (see `QdrantStore`): on SciFact
it cost 0.0005 nDCG@10, and it keeps a million 384-d vectors in 0.4 GB of RAM, not 1.5 GB."""
DEFAULT_VECTOR_DATATYPE: VectorDatatype = "float16"
"""New collections store their dense vectors as float16 unless told otherwise: half the memory
of float32, and cosine similarities that differ by about 1e-3."""
TENANT_PAYLOAD_KEY = "tenant_id"
"""The metadata key tenants are told apart by (`archivist.rag.store.tenant.TENANT_KEY`)."""


class QdrantStore(VectorStoreBase):
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

    WRITE_BATCH = 64
    """Points per engine write: bounds how long one write keeps the event loop."""
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

    def __init__(
        self,
        location: str | None = None,
        url: str | None = None,
        path: str | os.PathLike[str] | None = None,
        api_key: str | None = None,
        distance: str = "Cosine",
        client_kwargs: Mapping[str, Any] | None = None,
        *,
        auto_optimize_threshold: int | None = SEGMENT_POINTS,
        quantization: Quantization | None = DEFAULT_QUANTIZATION,
        vector_datatype: VectorDatatype = DEFAULT_VECTOR_DATATYPE,
        tenant_key: str | None = TENANT_PAYLOAD_KEY,
        tenants_only: bool = False,
        search_threads: int | None = None,
        max_open_collections: int | None = None,
    ) -> None:
        given = [
            name
            for name, value in (("location", location), ("url", url), ("path", path))
            if value is not None
        ]
        if len(given) != 1:
            raise InvalidArgumentError(
                f"give exactly one of location, url or path; got {', '.join(given) or 'none'}",
                argument="location",
            )
        if auto_optimize_threshold is not None:
            check_positive_int(auto_optimize_threshold, "auto_optimize_threshold")
        segment_points = auto_optimize_threshold or SEGMENT_POINTS
        layout = _layout(quantization, vector_datatype, tenant_key, tenants_only)
        if location is not None:
            if isinstance(location, str) and location.startswith(("http://", "https://")):
                url = location
            elif location != ":memory:":
                raise InvalidArgumentError(
                    f"location must be ':memory:' or an http(s):// URL, got {location!r}",
                    argument="location",
                )
        if url is None:
            if api_key is not None or client_kwargs is not None:
                raise InvalidArgumentError(
                    "api_key and client_kwargs apply only to a url store", argument="api_key"
                )
            if search_threads is not None:
                check_positive_int(search_threads, "search_threads")
            if max_open_collections is not None:
                check_positive_int(max_open_collections, "max_open_collections")
            directory = None if path is None else Path(path)
            engine = EdgeBackend(
                directory,
                segment_points,
                auto_optimize_threshold is not None,
                layout,
                search_threads or SEARCH_THREADS,
                max_open_collections or MAX_OPEN_COLLECTIONS,
            )
            self._setup(distance, engine)
            return
        for name, value in (
            ("search_threads", search_threads),
            ("max_open_collections", max_open_collections),
        ):
            if value is not None:
                raise InvalidArgumentError(
                    f"{name} applies only to an in-process store (path= or ':memory:'), "
                    "not to a server",
                    argument=name,
                )
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise InvalidArgumentError(
                f"url must be an http(s):// URL, got {url!r}", argument="url"
            )
        require("server", "qdrant_client", "QdrantStore(url=...)")
        address, options = url, dict(client_kwargs or {})

        def connect() -> AsyncQdrantClient:
            from qdrant_client import AsyncQdrantClient

            return AsyncQdrantClient(url=address, api_key=api_key, **options)

        self._setup(distance, _client_backend(connect, layout, owns_client=True))

    @classmethod
    def from_client(
        cls,
        client: AsyncQdrantClient,
        distance: str = "Cosine",
        *,
        quantization: Quantization | None = DEFAULT_QUANTIZATION,
        vector_datatype: VectorDatatype = DEFAULT_VECTOR_DATATYPE,
        tenant_key: str | None = TENANT_PAYLOAD_KEY,
        tenants_only: bool = False,
    ) -> QdrantStore:
        """A store on `client`, which stays yours: leaving `async with store` does not close it."""
        store = cls.__new__(cls)
        layout = _layout(quantization, vector_datatype, tenant_key, tenants_only)
        store._setup(distance, _client_backend(lambda: client, layout, owns_client=False))
        return store

    def _setup(self, distance: str, engine: QdrantBackend) -> None:
        self._distance = check_distance(distance)
        self._engine = engine
        self._is_open = False
        self._params: dict[str, CollectionParams] = {}
        self._collections_lock = asyncio.Lock()
        self._document_locks = KeyedLocks()
        self._stats_locks = KeyedLocks()
        self._encoders: dict[int, Bm25Encoder] = {}

    def _encoder(self, params: CollectionParams) -> Bm25Encoder:
        """The BM25 encoder of the term layout `params`'s collection was indexed with."""
        encoder = self._encoders.get(params.term_layout)
        if encoder is None:
            encoder = self._encoders[params.term_layout] = Bm25Encoder(params.term_layout)
        return encoder

    async def __aenter__(self) -> Self:
        if self._is_open:
            raise RuntimeError("QdrantStore is already open")
        self._params.clear()
        await self._engine.open()
        self._is_open = True
        return self

    async def aclose(self) -> None:
        """Close the engine (Edge shards, or the client's connections); `async with` does."""
        if self._is_open:
            self._is_open = False
            self._params.clear()
            await self._engine.close()

    def _open(self) -> QdrantBackend:
        if not self._is_open:
            raise RuntimeError("QdrantStore is not open: use it inside `async with store:`")
        return self._engine

    async def _params_of(self, name: str) -> CollectionParams | None:
        cached = self._params.get(name)
        if cached is not None:
            return cached
        backend = self._open()
        params = await backend.collection_params(name)
        if params is not None:
            await backend.ensure_indexes(name, INTERNAL_INDEXES)
            self._params[name] = params
        return params

    async def _require(self, name: str) -> CollectionParams:
        params = await self._params_of(name)
        if params is None:
            raise InvalidArgumentError(
                f"collection {name!r} does not exist; create it with create_collection",
                argument="collection",
            )
        return params

    async def _indexed(self, collection: str, matches: tuple[Condition, ...]) -> Where:
        """`matches` as a condition, with a payload index made (once) for every key it matches
        by value."""
        kinds = {m.key: index_kind(m.value) for m in matches if isinstance(m, Match)}
        await self._open().ensure_indexes(collection, kinds)
        return Where(matches)

    async def _narrowed(
        self, collection: str, scope: Where, search_filter: SearchFilter
    ) -> Where | None:
        """`scope` narrowed by `search_filter` as native conditions (payload indexes made
        once per field), or None when nothing can match. Path globs and types are resolved
        against the distinct `source` and `path` values within `scope` (a facet), and then
        matched by value."""
        backend = self._open()
        conditions: list[Condition] = []
        indexes: dict[str, IndexKind] = {}
        if search_filter.paths or search_filter.types:
            path = metadata_path(PATH_KEY)
            indexes.update({SOURCE: "keyword", path: "keyword"})
            await backend.ensure_indexes(collection, indexes)
            total = await backend.count(collection, scope)
            options = []
            for key in (SOURCE, path):
                values = await backend.facet(collection, key, scope, limit=max(total, 1))
                chosen = tuple(sorted(v for v in values if search_filter.path_matches(v)))
                if chosen:
                    options.append(Where((AnyOf(key, chosen),)))
            if not options:
                return None
            conditions.append(Either(tuple(options)))
        if search_filter.since is not None:
            since = search_filter.since.isoformat()
            modified, indexed = metadata_path(MODIFIED_KEY), metadata_path(INDEXED_AT_KEY)
            indexes.update({modified: "datetime", indexed: "datetime"})
            conditions.append(
                Either(
                    (
                        Where((Between(modified, gte=since, dates=True),)),
                        Where((Absent(modified), Between(indexed, gte=since, dates=True))),
                    )
                )
            )
        for key, wanted in search_filter.where.items():
            field = metadata_path(key)
            if isinstance(wanted, Range):
                conditions.append(_between(field, wanted))
                indexes.setdefault(field, "datetime" if wanted.is_dates else "float")
            elif wanted is None:
                conditions.append(Absent(field))
            else:
                conditions.append(Match(field, wanted))
                indexes.setdefault(field, index_kind(wanted))
        await backend.ensure_indexes(collection, indexes)
        return Where(scope.must + tuple(conditions), scope.must_not)

    async def create_collection(self, name: str, dimensions: int, *, sparse: bool = True) -> None:
        """Create collection `name` for `dimensions`-d vectors, with BM25 vectors for hybrid
        search unless `sparse` is False; a no-op if it exists with the same dimensions."""
        check_collection_name(name)
        check_positive_int(dimensions, "dimensions")
        if not isinstance(sparse, bool):
            raise InvalidArgumentError(f"sparse must be a bool, got {sparse!r}", argument="sparse")
        backend = self._open()
        async with self._collections_lock:
            existing = await self._params_of(name)
            if existing is None:
                params = CollectionParams(dimensions, self._distance, sparse, TERM_LAYOUT)
                try:
                    await backend.create_collection(name, params)
                except Exception:
                    # Another client of the same server may have created it meanwhile.
                    existing = await self._params_of(name)
                    if existing is None:
                        raise
                else:
                    self._params[name] = params
                    return
            if existing.dimensions != dimensions:
                raise InvalidArgumentError(
                    f"collection {name!r} exists with {existing.dimensions} dimensions, "
                    f"not dimensions={dimensions}",
                    argument="dimensions",
                )

    async def delete_collection(self, name: str) -> None:
        check_collection_name(name)
        backend = self._open()
        async with self._collections_lock:
            self._params.pop(name, None)
            if await backend.collection_params(name) is not None:
                await backend.delete_collection(name)

    async def has_collection(self, name: str) -> bool:
        check_collection_name(name)
        self._params.pop(name, None)
        return await self._params_of(name) is not None

    async def collection_dimensions(self, name: str) -> int | None:
        check_collection_name(name)
        self._params.pop(name, None)
        params = await self._params_of(name)
        return None if params is None else params.dimensions

    async def search_modes(self, collection: str) -> tuple[SearchMode, ...]:
        """All three modes for a collection with BM25 vectors; only "dense" otherwise."""
        check_collection_name(collection)
        params = await self._params_of(collection)
        return SEARCH_MODES if params is not None and params.sparse else ("dense",)

    async def term_layout(self, collection: str) -> int | None:
        check_collection_name(collection)
        params = await self._params_of(collection)
        return params.term_layout if params is not None and params.sparse else None

    async def optimize(self, collection: str) -> None:
        """Build the vector index of every segment that filled up (Edge only); a remainder
        smaller than a segment stays searched exactly."""
        check_collection_name(collection)
        await self._require(collection)
        await self._open().optimize(collection)

    async def insert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        """Write `records` as one write: all of them, or (on any error) none. A record whose
        document id, chunk index and metadata are already stored replaces that point."""
        check_collection_name(collection)
        self._open()
        if not records:
            return
        params = await self._require(collection)
        generation = new_generation()
        points = await self._points(
            collection, params, records, generation, functools.partial(points_for, stable_ids=True)
        )
        try:
            await self._upsert(collection, points)
        except BaseException as error:
            await discard_noting(functools.partial(self._discard, collection), generation, error)
            raise

    async def _points(
        self,
        collection: str,
        params: CollectionParams,
        records: Sequence[VectorRecord],
        generation: str,
        build: Callable[[Sequence[VectorRecord], int, str], list[PointWrite]],
    ) -> list[PointWrite]:
        """The points `build` makes of `records` (checking them), with the BM25 vector of each
        text chunk when the collection has them.

        Checking, payloads and term counting are Python per chunk: they run off the loop
        (`off_loop`), in a worker thread for a batch.
        Term weights use the collection's running average chunk length, this write included.
        """

        def built() -> tuple[list[PointWrite], list[TermCounts | None]]:
            points = build(records, params.dimensions, generation)
            return points, self._count_terms(params, records) if params.sparse else []

        points, counts = await off_loop(built, len(records))
        counted = [terms for terms in counts if terms is not None and terms.length]
        if not counted:
            return points
        backend = self._open()
        async with self._stats_locks.hold(collection):
            stats = await backend.bm25_stats(collection)
            average = stats.average_after(counted)
            stats.add(counted)
            await backend.save_bm25_stats(collection, stats)
        return await off_loop(functools.partial(_with_sparse, points, counts, average), len(points))

    def _count_terms(
        self, params: CollectionParams, records: Sequence[VectorRecord]
    ) -> list[TermCounts | None]:
        """The BM25 term counts of each text chunk (None for other chunks)."""
        encoder = self._encoder(params)
        return [
            encoder.count(record.chunk.content.text)
            if isinstance(record.chunk.content, TextBlock)
            else None
            for record in records
        ]

    async def _upsert(self, collection: str, points: list[PointWrite]) -> None:
        backend = self._open()
        for start in range(0, len(points), self.WRITE_BATCH):
            await backend.upsert(collection, points[start : start + self.WRITE_BATCH])

    async def _discard(self, collection: str, generation: str) -> None:
        """Delete what a failed write of `generation` stored."""
        await self._open().delete(collection, Where((Match(GENERATION, generation),)))

    async def replace_document(
        self,
        collection: str,
        document_id: str,
        batches: AsyncIterable[list[VectorRecord]],
        metadata_filter: MetadataFilter | None = None,
    ) -> int:
        """Write `batches` as the whole of `document_id` (within `metadata_filter`), then drop the
        old version; if anything fails, the new chunks are removed and the old version stays whole.
        """
        scope_filter = check_document_arguments(collection, document_id, metadata_filter)
        matches = metadata_matches(scope_filter)
        params = await self._require(collection)
        scope = await self._indexed(collection, matches)
        seen: set[tuple[str, int]] = set()
        build = functools.partial(
            points_for, document_id=document_id, metadata_filter=scope_filter, seen=seen
        )

        async def write(batch: list[VectorRecord], generation: str) -> int:
            points = await self._points(collection, params, batch, generation, build)
            await self._upsert(collection, points)
            return len(points)

        async def drop_older(generation: str) -> None:
            older = Where(
                (Match(DOCUMENT_ID, document_id), *scope.must), (Match(GENERATION, generation),)
            )
            await self._open().delete(collection, older)

        return await write_generation(
            batches,
            lock=self._document_locks.hold((collection, document_id)),
            write=write,
            drop_older=drop_older,
            discard=functools.partial(self._discard, collection),
        )

    async def delete(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> None:
        matches = metadata_matches(
            check_document_arguments(collection, document_id, metadata_filter)
        )
        if await self._params_of(collection) is None:
            return
        scope = await self._indexed(collection, matches)
        async with self._document_locks.hold((collection, document_id)):
            await self._open().delete(collection, scope.also(Match(DOCUMENT_ID, document_id)))

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
        params = await self._params_of(collection)
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
            narrowed = await self._narrowed(collection, scope, checked.search_filter)
            if narrowed is None:
                return []
            scope = narrowed
        query_idf: dict[int, float] = {}
        if sparse is not None:
            query_idf = await self._term_weights(collection, params, scope, sparse, query.exact)
        judge_hit = _judge(params, dense, sparse, query_idf)
        backend = self._open()

        async def ranked(excluded: tuple[str, ...], limit: int) -> list[Judged[ScoredPoint]]:
            where = scope
            if excluded:
                where = Where(scope.must, (*scope.must_not, AnyOf(DOCUMENT_ID, excluded)))
            if dense is not None and sparse is not None and diversity is None:
                return await self._hybrid(
                    collection, params, where, dense, sparse, query_idf, limit
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
            return rank(map(judge_hit, hits), _tie_break)[:limit]

        found = await best_hits(ranked, _document_of, _tie_break, top_k, max_per_document)
        return search_results(found, query, _document_of, _chunk_of)

    async def _hybrid(
        self,
        collection: str,
        params: CollectionParams,
        where: Where,
        dense: list[float],
        sparse: SparseVector,
        query_idf: dict[int, float],
        limit: int,
    ) -> list[Judged[ScoredPoint]]:
        """The best `limit` of a hybrid search's candidates (each side's best `depth`), ranked
        by relevance, with their payloads. A candidate's lexical evidence comes from the BM25
        vector stored with it; its similarity is the engine's dense score, asked for by id
        where only BM25 found it (computed here from the stored vector for a distance other
        than Cosine). Payloads are read for the hits kept only."""
        backend = self._open()
        depth = max(limit, self.HYBRID_DEPTH)
        by_cosine = params.distance == "Cosine"
        vectors = (SPARSE_VECTOR,) if by_cosine else ("", SPARSE_VECTOR)
        nearest, matching = await backend.search_batch(
            collection,
            [
                SearchRequest(depth, where, dense=dense, vectors=vectors, payload=False),
                SearchRequest(depth, where, sparse=sparse, vectors=vectors, payload=False),
            ],
        )
        candidates = {hit.id: hit for hit in (*matching, *nearest)}
        if by_cosine:
            similarity = {hit.id: hit.score for hit in nearest}
            unscored = tuple(hit.id for hit in matching if hit.id not in similarity)
            if unscored:
                within = where.also(HasId(unscored))
                request = SearchRequest(len(unscored), within, dense=dense, payload=False)
                similarity.update(
                    (hit.id, hit.score) for hit in await backend.search(collection, request)
                )
        else:
            norm = math.hypot(*dense)
            similarity = {
                hit.id: cosine(dense, hit.vector, norm)
                for hit in candidates.values()
                if hit.vector is not None
            }
        judged = []
        for point_id, hit in candidates.items():
            cosine_similarity = similarity.get(point_id)
            match, held = lexical_evidence(query_idf, hit.weights) if hit.weights else (None, None)
            judged.append(judge(hit, cosine_similarity or 0.0, cosine_similarity, match, held))
        kept = rank(judged, _tie_break)[:limit]
        payloads = await backend.retrieve(collection, [hit.item.id for hit in kept])
        return [
            dataclasses.replace(
                hit, item=dataclasses.replace(hit.item, payload=payloads[hit.item.id])
            )
            for hit in kept
            if hit.item.id in payloads  # deleted meanwhile
        ]

    async def _term_weights(
        self,
        collection: str,
        params: CollectionParams,
        scope: Where,
        sparse: SparseVector,
        exact: frozenset[int],
    ) -> dict[int, float]:
        """The IDF of each term of the query the lexical evidence weighs (see
        `ranking.query_weights`): the terms some chunk in `scope` holds, at the engine's IDF
        (over the whole collection, the one its BM25 ranking uses), and the query's `exact`
        terms that none holds, at the IDF of an unknown term. Presence is looked up within
        the scope only, so nothing of another tenant shows."""
        terms = sorted(set(sparse.indices))
        backend = self._open()
        known = await backend.term_idf(collection, scope, terms)
        if exact <= known.keys():
            return known
        stats = await backend.bm25_stats(collection)
        return query_weights(known, exact, stats.chunks)

    async def query_term_weights(
        self, collection: str, query_text: str, metadata_filter: MetadataFilter | None = None
    ) -> dict[int, float]:
        """The IDF of each BM25 term of `query_text` the lexical evidence of a search within
        `metadata_filter` weighs (`ranking.query_weights`)."""
        check_collection_name(collection)
        matches = metadata_matches(metadata_filter)
        params = await self._params_of(collection)
        if params is None or not params.sparse or not query_text:
            return {}
        encoder = self._encoder(params)
        sparse = encoder.query(query_text)
        if not sparse.indices:
            return {}
        scope = await self._indexed(collection, matches)
        exact = frozenset(encoder.exact(query_text))
        return await self._term_weights(collection, params, scope, sparse, exact)

    async def list_documents(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[DocumentSummary]:
        """One summary per document (by id), counting its chunks within `metadata_filter`."""
        check_collection_name(collection)
        matches = metadata_matches(metadata_filter)
        if await self._params_of(collection) is None:
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
        if await self._params_of(collection) is None:
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
        if await self._params_of(collection) is None or limit == 0:
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
        if await self._params_of(collection) is None or last < first:
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
        if await self._params_of(collection) is None:
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
        if await self._params_of(collection) is None:
            return []
        scope = (await self._indexed(collection, matches)).also(Match(DOCUMENT_ID, document_id))

        async def remove(stale: GenerationInfo) -> None:
            await self._open().delete(collection, scope.also(Match(GENERATION, stale.generation)))

        return await repair_generations(
            lock=self._document_locks.hold((collection, document_id)),
            generations=functools.partial(self._generations, collection, scope),
            remove=remove,
        )


def _judge(
    params: CollectionParams,
    dense: list[float] | None,
    sparse: SparseVector | None,
    query_idf: dict[int, float],
) -> Callable[[ScoredPoint], Judged[ScoredPoint]]:
    """How a hit of one ranked list is judged (see `archivist.rag.store.core.ranking`): a dense hit
    by its similarity (the engine's score; none for distances other than Cosine), a BM25 hit
    by its score's share of the best possible, a pick of maximal marginal relevance over
    both sides by its similarity and its lexical evidence, computed from the vectors stored
    with it (lexical evidence only if it has BM25 terms)."""
    query_norm = math.hypot(*dense) if dense is not None else 0.0
    cosine_scores = params.distance == "Cosine"

    def judged(hit: ScoredPoint) -> Judged[ScoredPoint]:
        if dense is None or sparse is None:
            if sparse is not None:
                return judge(hit, hit.score, lexical=lexical(query_idf, hit.score))
            score = higher_is_better(params.distance, hit.score)
            return judge(hit, score, similarity=hit.score if cosine_scores else None)
        similarity = None if hit.vector is None else cosine(dense, hit.vector, query_norm)
        match, held = lexical_evidence(query_idf, hit.weights) if hit.weights else (None, None)
        return judge(hit, similarity or 0.0, similarity, match, held)

    return judged


def _tie_break(point: ScoredPoint) -> tuple[str]:
    """The order of hits judged alike: by point id, which every store gives a chunk alike."""
    return (point.id,)


def _document_of(point: ScoredPoint) -> str:
    return str(point.payload[DOCUMENT_ID])


def _chunk_of(point: ScoredPoint) -> Chunk:
    return chunk_from(point.payload)


def _between(key: str, wanted: Range) -> Between:
    def bound(value: float | datetime | None) -> float | str | None:
        return value.isoformat() if isinstance(value, datetime) else value

    return Between(
        key,
        gte=bound(wanted.gte),
        gt=bound(wanted.gt),
        lte=bound(wanted.lte),
        lt=bound(wanted.lt),
        dates=wanted.is_dates,
    )


def _layout(
    quantization: object, vector_datatype: object, tenant_key: object, tenants_only: object
) -> StoreLayout:
    if quantization is not None and quantization != "int8":
        raise InvalidArgumentError(
            f"quantization must be 'int8' or None; got {quantization!r}", argument="quantization"
        )
    if vector_datatype not in VECTOR_DATATYPES:
        raise InvalidArgumentError(
            f"vector_datatype must be one of {', '.join(map(repr, VECTOR_DATATYPES))}; "
            f"got {vector_datatype!r}",
            argument="vector_datatype",
        )
    if tenant_key is not None and (not isinstance(tenant_key, str) or not tenant_key):
        raise InvalidArgumentError(
            f"tenant_key must be a metadata key or None; got {tenant_key!r}", argument="tenant_key"
        )
    if not isinstance(tenants_only, bool):
        raise InvalidArgumentError(
            f"tenants_only must be a bool; got {tenants_only!r}", argument="tenants_only"
        )
    if tenants_only and tenant_key is None:
        raise InvalidArgumentError("tenants_only needs a tenant_key", argument="tenants_only")
    return StoreLayout(
        quantization="int8" if quantization is not None else None,
        vector_datatype=vector_datatype,
        tenant_key=None if tenant_key is None else metadata_path(tenant_key),
        tenants_only=tenants_only,
    )


def _client_backend(
    connect: Callable[[], AsyncQdrantClient], layout: StoreLayout, *, owns_client: bool
) -> QdrantBackend:
    # Imported on demand: qdrant-client takes about two seconds to import.
    from archivist.rag.store.qdrant.client.backend import ClientBackend

    return ClientBackend(connect, owns_client, layout)


def _with_sparse(
    points: list[PointWrite], counts: list[TermCounts | None], average: float
) -> list[PointWrite]:
    """`points` with the BM25 vector of each one whose chunk has counted terms."""
    return [
        dataclasses.replace(point, sparse=Bm25Encoder.document(terms, average))
        if terms is not None and terms.length
        else point
        for point, terms in zip(points, counts, strict=True)
    ]
