"""`PgVectorStore`: chunks and vectors in PostgreSQL with pgvector, shared by many processes."""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

import numpy as np
from psycopg import AsyncConnection, OperationalError, errors, sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

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
from archivist.rag.store.core.bm25 import Bm25Encoder, TermCounts, check_term_layout
from archivist.rag.store.core.distance import check_distance
from archivist.rag.store.core.generations import (
    GenerationInfo,
    new_generation,
    repair_generations,
    write_generation,
)
from archivist.rag.store.core.layout import (
    CHUNK_INDEX,
    CONTENT,
    DOCUMENT_ID,
    GENERATION,
    METADATA,
    SOURCE,
    TOTAL_CHUNKS,
    chunk_from,
)
from archivist.rag.store.core.points import PointWrite, points_for
from archivist.rag.store.core.query import best_hits, plan_query, search_results
from archivist.rag.store.core.ranking import Judged, rank
from archivist.rag.store.core.terms import TERM_LAYOUT
from archivist.rag.store.pgvector.filter import where_metadata
from archivist.rag.store.pgvector.schema import (
    Tables,
    check_prefix,
    collection_ddl,
    registry_ddl,
)
from archivist.rag.store.pgvector.search import (
    CHUNK_COLUMNS,
    Limits,
    Row,
    SearchPlan,
    document_of,
    tie_break,
)
from archivist.rag.store.search_filter import SearchFilter
from archivist.validation import (
    check_collection_name,
    check_document_id,
    check_positive_int,
)

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PgVectorStore"]


@dataclass(frozen=True)
class _Collection:
    dimensions: int
    distance: str
    sparse: bool
    term_layout: int
    tables: Tables


class PgVectorStore(VectorStoreBase):
    """Chunks and their vectors in PostgreSQL (pgvector 0.8+); higher scores are better.

    `url` is a libpq connection string or `postgresql://` URL. The database needs the `vector`
    extension, which the store creates on first open if the user may (`CREATE EXTENSION vector`
    otherwise, once, as a superuser). Every process that opens the same database and
    `table_prefix` sees the same collections: writes and deletes are transactions, a replace is
    locked per document across processes (PostgreSQL advisory locks).

    Dense search uses an HNSW index per collection (iterative scans, so a metadata filter never
    starves the result list). Sparse search is BM25 written out in SQL over an inverted index
    table: the same terms and term weights as the Qdrant store (`archivist.rag.store.core.terms`),
    IDF from exact per-term document frequencies. `mode="hybrid"` takes the best chunks of
    both sides in one SQL statement and ranks them by relevance as the Qdrant store does
    (`archivist.rag.store.core.ranking`).

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
    )
    WRITE_BATCH = 256
    """Chunks per write transaction."""
    HYBRID_DEPTH = 50
    """Candidates each side of a hybrid search fetches (at least `top_k`) to be ranked
    together by relevance. Deeper candidates change no SciFact top 10 (see
    `benchmarks/bench_search_trust.py depth`) and cost time in every search."""
    EF_SEARCH = 100
    """HNSW candidate list per search (at least the results wanted): Qdrant's default."""
    EXACT_BELOW = 10_000
    """A filtered dense search over fewer matching chunks ranks them exactly (no graph),
    as Qdrant does below its full-scan threshold: exact, and cheap at that size."""

    def __init__(
        self,
        url: str,
        *,
        distance: str = "Cosine",
        table_prefix: str = "archivist_vec",
        max_connections: int = 10,
    ) -> None:
        if not isinstance(url, str) or not url.strip():
            raise InvalidArgumentError(
                f"url must be a PostgreSQL connection string, got {url!r}", argument="url"
            )
        self._url = url
        self._distance = check_distance(distance)
        self._prefix = check_prefix(table_prefix)
        self._registry = sql.Identifier(f"{self._prefix}_collections")
        self._max_connections = check_positive_int(max_connections, "max_connections")
        self._pool: AsyncConnectionPool | None = None
        self._collections: dict[str, _Collection] = {}
        self._encoders: dict[int, Bm25Encoder] = {}

    def _encoder(self, layout: int) -> Bm25Encoder:
        """The BM25 encoder of term layout `layout`."""
        encoder = self._encoders.get(layout)
        if encoder is None:
            encoder = self._encoders[layout] = Bm25Encoder(layout)
        return encoder

    # Opening and closing

    async def __aenter__(self) -> Self:
        if self._pool is not None:
            raise RuntimeError("PgVectorStore is already open")
        from psycopg_pool import AsyncConnectionPool

        await self._prepare_database()

        async def configure(connection: AsyncConnection[Any]) -> None:
            # pgvector's own adapter: vectors travel as binary float32, not as float8 arrays.
            from pgvector.psycopg import register_vector_async

            await register_vector_async(connection)
            await connection.set_autocommit(True)

        pool: AsyncConnectionPool = AsyncConnectionPool(
            self._url,
            min_size=1,
            max_size=self._max_connections,
            configure=configure,
            open=False,
        )
        await pool.open(wait=True)
        self._pool = pool
        self._collections.clear()
        return self

    async def _prepare_database(self) -> None:
        """The vector extension and the registry table, created once under a lock."""
        try:
            opened = await AsyncConnection.connect(self._url, autocommit=True)
        except OperationalError as exc:
            raise ConnectionError(
                f"cannot connect to PostgreSQL at {_redacted(self._url)}: {exc}"
            ) from None
        async with opened as connection, connection.transaction():
            await connection.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('archivist-schema', 0))"
            )
            await connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
            for statement in registry_ddl(self._registry):
                await connection.execute(statement)

    async def aclose(self) -> None:
        """Close the connection pool; `async with` does."""
        pool, self._pool = self._pool, None
        self._collections.clear()
        if pool is not None:
            await pool.close()

    def _open(self) -> AsyncConnectionPool:
        if self._pool is None:
            raise RuntimeError("PgVectorStore is not open: use it inside `async with store:`")
        return self._pool

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncConnection[Any]]:
        async with self._open().connection() as connection, connection.transaction():
            yield connection

    @staticmethod
    async def _lock(connection: AsyncConnection[Any], *key: str) -> None:
        """Take the transaction-scoped advisory lock named by `key`."""
        await connection.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", ["\x1f".join(key)]
        )

    # Collections

    async def _collection(self, name: str, *, fresh: bool = False) -> _Collection | None:
        if not fresh and name in self._collections:
            return self._collections[name]
        async with self._open().connection() as connection:
            cursor = await connection.execute(
                sql.SQL(
                    "SELECT dimensions, distance, sparse, term_layout FROM {} WHERE name = %s"
                ).format(self._registry),
                [name],
            )
            row = await cursor.fetchone()
        if row is None:
            self._collections.pop(name, None)
            return None
        found = _Collection(
            int(row[0]),
            str(row[1]),
            bool(row[2]),
            check_term_layout(int(row[3])),
            Tables.of(self._prefix, name),
        )
        self._collections[name] = found
        return found

    async def _require(self, name: str) -> _Collection:
        found = await self._collection(name)
        if found is None:
            raise InvalidArgumentError(
                f"collection {name!r} does not exist; create it with create_collection",
                argument="collection",
            )
        return found

    async def create_collection(self, name: str, dimensions: int, *, sparse: bool = True) -> None:
        """Create collection `name` for `dimensions`-d vectors, with BM25 terms for hybrid
        search unless `sparse` is False; a no-op if it exists with the same dimensions."""
        check_collection_name(name)
        check_positive_int(dimensions, "dimensions")
        if not isinstance(sparse, bool):
            raise InvalidArgumentError(f"sparse must be a bool, got {sparse!r}", argument="sparse")
        existing = await self._collection(name, fresh=True)
        if existing is None:
            async with self._transaction() as connection:
                await self._lock(connection, "collections")
                cursor = await connection.execute(
                    sql.SQL("SELECT 1 FROM {} WHERE name = %s").format(self._registry), [name]
                )
                if await cursor.fetchone() is None:
                    tables = Tables.of(self._prefix, name)
                    for statement in collection_ddl(tables, dimensions, self._distance):
                        await connection.execute(statement)
                    await connection.execute(
                        sql.SQL(
                            "INSERT INTO {} (name, dimensions, distance, sparse, term_layout) "
                            "VALUES (%s, %s, %s, %s, %s)"
                        ).format(self._registry),
                        [name, dimensions, self._distance, sparse, TERM_LAYOUT],
                    )
            existing = await self._require(name)
        if existing.dimensions != dimensions:
            raise InvalidArgumentError(
                f"collection {name!r} exists with {existing.dimensions} dimensions, "
                f"not dimensions={dimensions}",
                argument="dimensions",
            )

    async def delete_collection(self, name: str) -> None:
        check_collection_name(name)
        self._open()
        self._collections.pop(name, None)
        tables = Tables.of(self._prefix, name)
        async with self._transaction() as connection:
            await self._lock(connection, "collections")
            await self._lock(connection, "collection", name)
            await connection.execute(
                sql.SQL("DROP TABLE IF EXISTS {}, {}, {}").format(
                    tables.df, tables.terms, tables.chunks
                )
            )
            await connection.execute(
                sql.SQL("DELETE FROM {} WHERE name = %s").format(self._registry), [name]
            )

    async def has_collection(self, name: str) -> bool:
        check_collection_name(name)
        return await self._collection(name, fresh=True) is not None

    async def collection_dimensions(self, name: str) -> int | None:
        check_collection_name(name)
        found = await self._collection(name, fresh=True)
        return None if found is None else found.dimensions

    async def search_modes(self, collection: str) -> tuple[SearchMode, ...]:
        """All three modes for a collection with BM25 terms; only "dense" otherwise."""
        check_collection_name(collection)
        found = await self._collection(collection)
        return SEARCH_MODES if found is not None and found.sparse else ("dense",)

    async def term_layout(self, collection: str) -> int | None:
        check_collection_name(collection)
        found = await self._collection(collection)
        return found.term_layout if found is not None and found.sparse else None

    # Writing

    async def insert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        """Write `records` in one transaction: all of them or none. A record whose document id,
        chunk index and metadata are already stored replaces that chunk."""
        check_collection_name(collection)
        self._open()
        if not records:
            return
        found = await self._require(collection)
        points = await off_loop(  # Python per record
            functools.partial(
                points_for, records, found.dimensions, new_generation(), stable_ids=True
            ),
            len(records),
        )
        async with self._transaction() as connection:
            await self._write(connection, collection, found, records, points)

    async def _write(
        self,
        connection: AsyncConnection[Any],
        collection: str,
        found: _Collection,
        records: Sequence[VectorRecord],
        points: list[PointWrite],
    ) -> None:
        """Store `points` (replacing any with the same ids) with their BM25 postings, inside
        the caller's transaction, holding the collection's write lock."""
        await self._lock(connection, "collection", collection)
        tables = found.tables
        ids = [point.id for point in points]
        await self._delete_where(
            connection, collection, found, sql.SQL("c.id = ANY(%s::uuid[])"), [ids]
        )
        counts: list[TermCounts | None] = [None] * len(points)
        if found.sparse:  # Python per chunk
            encoder = self._encoder(found.term_layout)
            counts = await off_loop(
                lambda: [
                    encoder.count(record.chunk.content.text)
                    if isinstance(record.chunk.content, TextBlock)
                    else None
                    for record in records
                ],
                len(records),
            )
        lengths = [0 if terms is None else terms.length for terms in counts]
        async with connection.cursor() as cursor:
            await cursor.executemany(
                sql.SQL(
                    "INSERT INTO {} (id, document_id, generation, chunk_index, total_chunks, "
                    "source, content, metadata, terms, embedding) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                ).format(tables.chunks),
                [
                    (
                        point.id,
                        point.payload[DOCUMENT_ID],
                        point.payload[GENERATION],
                        point.payload[CHUNK_INDEX],
                        point.payload[TOTAL_CHUNKS],
                        point.payload[SOURCE],
                        point.payload[CONTENT],
                        Jsonb(point.payload[METADATA]),
                        length,
                        np.asarray(point.vector, dtype=np.float32),
                    )
                    for point, length in zip(points, lengths, strict=True)
                ],
            )
        counted = [(point.id, terms) for point, terms in zip(points, counts, strict=True) if terms]
        counted = [(point_id, terms) for point_id, terms in counted if terms.length]
        if not counted:
            return
        cursor = await connection.execute(
            sql.SQL("SELECT sparse_chunks, sparse_tokens FROM {} WHERE name = %s").format(
                self._registry
            ),
            [collection],
        )
        row = await cursor.fetchone()
        chunks = (int(row[0]) if row else 0) + len(counted)
        tokens = (int(row[1]) if row else 0) + sum(terms.length for _, terms in counted)
        average = tokens / chunks
        term_ids: list[int] = []
        chunk_ids: list[str] = []
        weights: list[float] = []
        for point_id, terms in counted:
            vector = Bm25Encoder.document(terms, average)
            term_ids.extend(vector.indices)
            chunk_ids.extend([point_id] * len(vector.indices))
            weights.extend(vector.values)
        await connection.execute(
            sql.SQL(
                "INSERT INTO {} (term, chunk, weight) "
                "SELECT * FROM unnest(%s::bigint[], %s::uuid[], %s::real[])"
            ).format(tables.terms),
            [term_ids, chunk_ids, weights],
        )
        await connection.execute(
            sql.SQL(
                "INSERT INTO {0} (term, df) SELECT term, count(*) FROM unnest(%s::bigint[]) "
                "AS t(term) GROUP BY term ORDER BY term "
                "ON CONFLICT (term) DO UPDATE SET df = {0}.df + excluded.df"
            ).format(tables.df),
            [term_ids],
        )
        await connection.execute(
            sql.SQL(
                "UPDATE {} SET sparse_chunks = sparse_chunks + %s, "
                "sparse_tokens = sparse_tokens + %s WHERE name = %s"
            ).format(self._registry),
            [len(counted), sum(terms.length for _, terms in counted), collection],
        )

    async def _delete_where(
        self,
        connection: AsyncConnection[Any],
        collection: str,
        found: _Collection,
        condition: sql.Composable,
        params: Sequence[Any],
    ) -> None:
        """Delete the chunks (alias `c`) matching `condition`, keeping document frequencies and
        BM25 totals exact; inside the caller's transaction, holding the collection's lock."""
        tables = found.tables
        if found.sparse:
            await connection.execute(
                sql.SQL(
                    "UPDATE {df} SET df = {df}.df - gone.n FROM ("
                    "SELECT t.term, count(*) AS n FROM {terms} t JOIN {chunks} c ON c.id = t.chunk "
                    "WHERE {condition} GROUP BY t.term) AS gone WHERE {df}.term = gone.term"
                ).format(
                    df=tables.df, terms=tables.terms, chunks=tables.chunks, condition=condition
                ),
                params,
            )
        cursor = await connection.execute(
            sql.SQL(
                "WITH gone AS (DELETE FROM {chunks} c WHERE {condition} RETURNING c.terms) "
                "SELECT count(*) FILTER (WHERE terms > 0), coalesce(sum(terms), 0) FROM gone"
            ).format(chunks=tables.chunks, condition=condition),
            params,
        )
        row = await cursor.fetchone()
        if found.sparse and row is not None and row[0]:
            await connection.execute(
                sql.SQL(
                    "UPDATE {} SET sparse_chunks = sparse_chunks - %s, "
                    "sparse_tokens = sparse_tokens - %s WHERE name = %s"
                ).format(self._registry),
                [int(row[0]), int(row[1]), collection],
            )

    async def _delete(
        self, collection: str, found: _Collection, condition: sql.Composable, params: list[Any]
    ) -> None:
        async with self._transaction() as connection:
            await self._lock(connection, "collection", collection)
            await self._delete_where(connection, collection, found, condition, params)

    @asynccontextmanager
    async def _document_lock(self, collection: str, document_id: str) -> AsyncIterator[None]:
        """Hold the cross-process lock on one document (a session advisory lock on a
        connection kept for the purpose) while the block runs."""
        key = "\x1f".join(("document", collection, document_id))
        async with self._open().connection() as connection:
            await connection.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [key])
            try:
                yield
            finally:
                await connection.execute(
                    "SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [key]
                )

    async def replace_document(
        self,
        collection: str,
        document_id: str,
        batches: AsyncIterable[list[VectorRecord]],
        metadata_filter: MetadataFilter | None = None,
    ) -> int:
        """Write `batches` as the whole of `document_id` (within `metadata_filter`) as a new
        generation, then drop the old one in one transaction; if anything fails, the new
        chunks are removed and the old version stays whole. A process killed part-way leaves
        the old version beside a partial new one, which `repair_document` removes."""
        scope, scope_params = where_metadata(
            check_document_arguments(collection, document_id, metadata_filter)
        )
        found = await self._require(collection)
        seen: set[tuple[str, int]] = set()

        async def write(batch: list[VectorRecord], generation: str) -> int:
            points = await off_loop(
                functools.partial(
                    points_for,
                    batch,
                    found.dimensions,
                    generation,
                    document_id=document_id,
                    metadata_filter=metadata_filter,
                    seen=seen,
                ),
                len(batch),
            )
            if points:
                async with self._transaction() as connection:
                    await self._write(connection, collection, found, batch, points)
            return len(points)

        async def drop_older(generation: str) -> None:
            await self._delete(
                collection,
                found,
                sql.SQL("c.document_id = %s AND c.generation <> %s AND {}").format(scope),
                [document_id, generation, *scope_params],
            )

        async def discard(generation: str) -> None:
            await self._delete(collection, found, sql.SQL("c.generation = %s"), [generation])

        return await write_generation(
            batches,
            lock=self._document_lock(collection, document_id),
            write=write,
            drop_older=drop_older,
            discard=discard,
        )

    async def delete(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> None:
        scope, scope_params = where_metadata(
            check_document_arguments(collection, document_id, metadata_filter)
        )
        found = await self._collection(collection)
        if found is None:
            return
        async with self._document_lock(collection, document_id):
            await self._delete(
                collection,
                found,
                sql.SQL("c.document_id = %s AND {}").format(scope),
                [document_id, *scope_params],
            )

    # Reading

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
        """The `top_k` best chunks within `metadata_filter`, by `mode`, best first by
        relevance (`archivist.rag.store.core.ranking`), as the Qdrant store ranks them:

        "dense" ranks by `query_vector` (scores are similarities); "sparse" by BM25 of
        `query_text` (scores are BM25 sums); "hybrid" takes the best chunks of both sides and
        ranks them together (scores are relevances). Sparse and hybrid need a collection with
        BM25 terms. With `max_per_document`, at most that many chunks of one document.
        `diversity` and `search_filter` are not offered (ValueError).
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
        self.capabilities.refuse_undeclared(checked, type(self).__name__)
        scope, scope_params = where_metadata(checked.metadata_filter)
        found = await self._collection(collection)
        if found is None:
            return []
        query = plan_query(
            collection,
            query_vector,
            query_text,
            mode,
            dimensions=found.dimensions,
            encoder=self._encoder(found.term_layout) if found.sparse else None,
        )
        if query is None:
            return []  # no searchable term in the query
        plan = SearchPlan(
            self._open(),
            self._registry,
            collection,
            found.tables,
            found.distance,
            query.dense,
            None if query.sparse is None else query.sparse.indices,
            scope,
            scope_params,
            Limits(self.HYBRID_DEPTH, self.EF_SEARCH, self.EXACT_BELOW),
        )
        try:
            query_idf = await plan.query_idf(set(query.exact))
            judge_row = plan.judge(query_idf)

            async def ranked(excluded: tuple[str, ...], limit: int) -> list[Judged[Row]]:
                rows = await plan.rows(query_idf, excluded, limit)
                return rank(map(judge_row, rows), tie_break)[:limit]

            hits = await best_hits(ranked, document_of, tie_break, top_k, max_per_document)
        except errors.UndefinedTable:
            self._collections.pop(collection, None)
            return []
        return search_results(hits, query, document_of, _chunk)

    async def list_documents(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[DocumentSummary]:
        """One summary per document (by id), counting its chunks within `metadata_filter`,
        described by its lowest chunk."""
        check_collection_name(collection)
        scope, scope_params = where_metadata(metadata_filter)
        found = await self._collection(collection)
        if found is None:
            return []
        statement = sql.SQL(
            "SELECT DISTINCT ON (c.document_id) c.document_id, c.source, c.metadata, "
            "count(*) OVER (PARTITION BY c.document_id) AS chunk_count "
            "FROM {} c WHERE {} ORDER BY c.document_id, c.chunk_index, c.generation"
        ).format(found.tables.chunks, scope)
        rows = await self._fetch(collection, statement, scope_params)
        return [
            DocumentSummary(
                document_id=row[DOCUMENT_ID],
                source=row[SOURCE],
                chunk_count=int(row["chunk_count"]),
                metadata=row[METADATA] or {},
            )
            for row in rows
        ]

    async def document_summary(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> DocumentSummary | None:
        """One document's summary through the (document_id, chunk_index) index, whatever the
        size of the collection."""
        scope, scope_params = where_metadata(
            check_document_arguments(collection, document_id, metadata_filter)
        )
        found = await self._collection(collection)
        if found is None:
            return None
        statement = sql.SQL(
            "SELECT c.source, c.metadata, count(*) OVER () AS chunk_count FROM {} c "
            "WHERE c.document_id = %s AND {} ORDER BY c.chunk_index, c.generation LIMIT 1"
        ).format(found.tables.chunks, scope)
        rows = await self._fetch(collection, statement, [document_id, *scope_params])
        if not rows:
            return None
        (row,) = rows
        return DocumentSummary(
            document_id=document_id,
            source=row[SOURCE],
            chunk_count=int(row["chunk_count"]),
            metadata=row[METADATA] or {},
        )

    async def list_chunks(
        self,
        collection: str,
        document_id: str,
        offset: int = 0,
        limit: int = 30,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[Chunk]:
        scope, scope_params = where_metadata(
            check_chunk_page(collection, document_id, offset, limit, metadata_filter)
        )
        found = await self._collection(collection)
        if found is None or limit == 0:
            return []
        statement = sql.SQL(
            "SELECT {} FROM {} c WHERE c.document_id = %s AND {} "
            "ORDER BY c.chunk_index, c.generation OFFSET %s LIMIT %s"
        ).format(CHUNK_COLUMNS, found.tables.chunks, scope)
        rows = await self._fetch(collection, statement, [document_id, *scope_params, offset, limit])
        return [_chunk(row) for row in rows]

    async def document_generations(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
        document_id: str | None = None,
    ) -> list[GenerationInfo]:
        """Every (document, generation) within `metadata_filter` with the chunk indexes it
        holds, for `KnowledgeBase.verify`."""
        check_collection_name(collection)
        if document_id is not None:
            check_document_id(document_id)
        scope, scope_params = where_metadata(metadata_filter)
        found = await self._collection(collection)
        if found is None:
            return []
        return await self._generations(collection, found, scope, scope_params, document_id)

    async def _generations(
        self,
        collection: str,
        found: _Collection,
        scope: sql.Composable,
        scope_params: list[Any],
        document_id: str | None,
    ) -> list[GenerationInfo]:
        one = sql.SQL("c.document_id = %s") if document_id is not None else sql.SQL("TRUE")
        statement = sql.SQL(
            "SELECT c.document_id, c.generation, "
            "array_agg(c.chunk_index ORDER BY c.chunk_index) AS indexes, "
            "array_agg(DISTINCT c.total_chunks) AS totals "
            "FROM {} c WHERE {} AND {} GROUP BY c.document_id, c.generation "
            "ORDER BY c.document_id, c.generation"
        ).format(found.tables.chunks, one, scope)
        params = [*([document_id] if document_id is not None else []), *scope_params]
        rows = await self._fetch(collection, statement, params)
        return [
            GenerationInfo(
                document_id=row[DOCUMENT_ID],
                generation=row[GENERATION],
                chunk_indexes=list(row["indexes"]),
                total_chunks=sorted(row["totals"]),
            )
            for row in rows
        ]

    async def repair_document(
        self,
        collection: str,
        document_id: str,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[GenerationInfo]:
        """Make `document_id` (within `metadata_filter`) whole again; returns what was removed.

        Holds the document's lock, so a replace of it in flight in any process finishes first
        and is never mistaken for a leftover. See `generations.repair_plan` for what is kept.
        """
        scope, scope_params = where_metadata(
            check_document_arguments(collection, document_id, metadata_filter)
        )
        found = await self._collection(collection)
        if found is None:
            return []

        async def remove(stale: GenerationInfo) -> None:
            await self._delete(
                collection,
                found,
                sql.SQL("c.document_id = %s AND c.generation = %s AND {}").format(scope),
                [document_id, stale.generation, *scope_params],
            )

        return await repair_generations(
            lock=self._document_lock(collection, document_id),
            generations=functools.partial(
                self._generations, collection, found, scope, scope_params, document_id
            ),
            remove=remove,
        )

    async def _fetch(
        self, collection: str, statement: sql.Composed, params: Sequence[Any]
    ) -> list[dict[str, Any]]:
        """The rows of a read; none if another process dropped the collection meanwhile."""
        try:
            async with self._open().connection() as connection:
                cursor = connection.cursor(row_factory=dict_row)
                await cursor.execute(statement, params)
                return await cursor.fetchall()
        except errors.UndefinedTable:
            self._collections.pop(collection, None)
            return []


def _chunk(row: Mapping[str, Any]) -> Chunk:
    return chunk_from({**row, METADATA: row[METADATA] or {}})


def _redacted(url: str) -> str:
    """`url` without its password."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
