"""`PgVectorStore`: chunks and vectors in PostgreSQL with pgvector, shared by many processes."""

from __future__ import annotations

from archivist.rag.store.capabilities import StoreCapabilities
from archivist.rag.store.core.arguments import SEARCH_MODES
from archivist.rag.store.core.datatype import DEFAULT_VECTOR_DATATYPE, VectorDatatype
from archivist.rag.store.core.store import CoreStore
from archivist.rag.store.pgvector.engine import PgVectorEngine
from archivist.rag.store.pgvector.filter import SqlScope
from archivist.rag.store.pgvector.schema import Collection
from archivist.rag.store.pgvector.search import Row
from archivist.rag.store.tenant import TENANT_KEY
from archivist.validation import check_collection_name

__all__ = ["PgVectorStore"]


class PgVectorStore(CoreStore[Collection, SqlScope, Row]):
    """Chunks and their vectors in PostgreSQL (pgvector 0.8+); higher scores are better.

    `url` is a libpq connection string or `postgresql://` URL. The database needs the `vector`
    extension, which the store creates on first open if the user may (`CREATE EXTENSION vector`
    otherwise, once, as a superuser). Every process that opens the same database and
    `table_prefix` sees the same collections: writes and deletes are transactions, a replace is
    locked per document across processes (PostgreSQL advisory locks).

    Dense search uses an HNSW index per collection (iterative scans, so a metadata filter never
    starves the result list), its candidate list widened as the share of the collection a
    filter holds shrinks. A filter holding fewer than `EXACT_BELOW` chunks is ranked exactly.
    `optimize()` gives each tenant (metadata key `tenant_key`, default "tenant_id", the key
    `archivist.rag.store.tenant` scopes by; None: none) holding more its own HNSW index, which
    the tenant's searches then walk, and its own index of the BM25 terms its chunks hold;
    they are built without blocking writes. A large load goes
    faster inside `async with store.bulk_load(collection):`, which builds the indexes once at
    its end.

    `vector_datatype` is how collections this store creates keep their dense vectors, as on
    `QdrantStore`: "float16" (the default, pgvector's `halfvec`) halves the vectors' disk and
    their HNSW index and keeps cosine similarities to about 1e-3; "float32" (`vector`). A
    collection keeps the datatype it was created with (collections made before datatypes
    were recorded hold float32).

    Sparse search is exact BM25 in SQL: the same terms and term
    weights as the Qdrant store (`archivist.rag.store.core.terms`), IDF from exact per-term
    document frequencies; a GIN index over each chunk's term slots finds the chunks in scope
    holding a query term that can still lift them into the results (MaxScore), and a pgvector
    sparsevec inner product with the query's IDF scores them. Writes are binary COPY.
    `mode="hybrid"` takes the best chunks of both sides in one SQL statement and ranks them by
    relevance as the Qdrant store does (`archivist.rag.store.core.ranking`).

    Use it inside `async with store:`; it holds a pool of up to `max_connections` connections.
    """

    capabilities = StoreCapabilities(
        search_modes=frozenset(SEARCH_MODES),
        grouping=True,
        relevance=True,
        scoped_delete=True,
        chunk_listing=True,
        atomic_replace=True,
        generations=True,
        search_filter=True,
    )

    def __init__(
        self,
        url: str,
        *,
        distance: str = "Cosine",
        table_prefix: str = "archivist_vec",
        max_connections: int = 10,
        tenant_key: str | None = TENANT_KEY,
        vector_datatype: VectorDatatype = DEFAULT_VECTOR_DATATYPE,
    ) -> None:
        self._pg = PgVectorEngine(
            url,
            distance=distance,
            table_prefix=table_prefix,
            max_connections=max_connections,
            tenant_key=tenant_key,
            vector_datatype=vector_datatype,
        )
        super().__init__(self._pg)  # `_pg`: the engine as its own type, for what only it does

    async def begin_bulk_load(self, collection: str) -> None:
        """Drop the collection's HNSW indexes until `end_bulk_load` (or any `optimize`) builds
        them again, once, over every row: written without them, a large batch goes in several
        times faster. Dense searches meanwhile rank the chunks in scope exactly: correct,
        slower on a large collection. Writes wait while the shared index is built."""
        check_collection_name(collection)
        await self._pg.begin_bulk_load(collection)
