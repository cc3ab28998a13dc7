"""`QdrantStore`: the vector store on Qdrant, in-process (Qdrant Edge) or a server."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

from archivist.rag.store.capabilities import StoreCapabilities
from archivist.rag.store.core.arguments import SEARCH_MODES
from archivist.rag.store.core.datatype import DEFAULT_VECTOR_DATATYPE, VectorDatatype
from archivist.rag.store.core.engine import CollectionShape
from archivist.rag.store.core.store import CoreStore
from archivist.rag.store.file_lock import StoreLockedError
from archivist.rag.store.qdrant.backend import Quantization, ScoredPoint
from archivist.rag.store.qdrant.connect import client_backend, engine_for, store_layout
from archivist.rag.store.qdrant.edge.optimizer import SEGMENT_POINTS
from archivist.rag.store.qdrant.engine import QdrantEngine
from archivist.rag.store.qdrant.filter import Where
from archivist.validation import MetadataFilter, check_collection_name, check_metadata_filter

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient

__all__ = [
    "DEFAULT_QUANTIZATION",
    "DEFAULT_VECTOR_DATATYPE",
    "TENANT_PAYLOAD_KEY",
    "QdrantStore",
    "StoreLockedError",
]


DEFAULT_QUANTIZATION: Quantization | None = "int8"
"""New collections quantize their vectors unless told otherwise (see `QdrantStore`): on SciFact
it cost 0.0005 nDCG@10, and it keeps a million 384-d vectors in 0.4 GB of RAM, not 1.5 GB."""
TENANT_PAYLOAD_KEY = "tenant_id"
"""The metadata key tenants are told apart by (`archivist.rag.store.tenant.TENANT_KEY`)."""


class QdrantStore(CoreStore[CollectionShape, Where, ScoredPoint]):
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

    _engine: QdrantEngine
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
        layout = store_layout(quantization, vector_datatype, tenant_key, tenants_only)
        backend = engine_for(
            location,
            url,
            path,
            api_key,
            client_kwargs,
            auto_optimize_threshold,
            layout,
            search_threads,
            max_open_collections,
        )
        super().__init__(QdrantEngine(distance, backend))

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
    ) -> Self:
        """A store on `client`, which stays yours: leaving `async with store` does not close it."""
        store = cls.__new__(cls)
        layout = store_layout(quantization, vector_datatype, tenant_key, tenants_only)
        backend = client_backend(lambda: client, layout, owns_client=False)
        CoreStore.__init__(store, QdrantEngine(distance, backend))
        return store

    async def query_term_weights(
        self, collection: str, query_text: str, metadata_filter: MetadataFilter | None = None
    ) -> dict[int, float]:
        """The IDF of each BM25 term of `query_text` the lexical evidence of a search within
        `metadata_filter` weighs (`ranking.query_weights`)."""
        check_collection_name(collection)
        checked = check_metadata_filter(metadata_filter)
        shape = await self._engine.shape(collection)
        if shape is None or not shape.sparse or not query_text:
            return {}
        sparse = self._encoder(shape).query(query_text)
        if not sparse.indices:
            return {}
        scope = await self._engine.scope(collection, checked)
        return await self._engine.term_weights(collection, scope, sparse)
