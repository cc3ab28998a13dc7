"""`PgVectorEngine`: the engine of `PgVectorStore`: the connection pool, the collections (a
registry row and tables each), the writes (chunks with their BM25 weights) and the deletes;
its reads are `PgVectorReading`'s."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from psycopg import AsyncConnection, OperationalError, errors, sql

from archivist.errors import InvalidArgumentError
from archivist.rag.store.core.bm25 import TermCounts, check_term_layout
from archivist.rag.store.core.datatype import (
    DEFAULT_VECTOR_DATATYPE,
    VectorDatatype,
    check_vector_datatype,
)
from archivist.rag.store.core.distance import check_distance
from archivist.rag.store.core.engine import missing_collection
from archivist.rag.store.core.points import PointWrite
from archivist.rag.store.core.terms import TERM_LAYOUT
from archivist.rag.store.pgvector.bulk_load import (
    build_shared_graph,
    drop_graphs,
    has_shared_graph,
)
from archivist.rag.store.pgvector.filter import SqlScope, where_metadata
from archivist.rag.store.pgvector.reading import PgVectorReading
from archivist.rag.store.pgvector.schema import (
    STORAGE,
    Collection,
    Tables,
    check_prefix,
    collection_ddl,
    migration_ddl,
    registry_ddl,
)
from archivist.rag.store.pgvector.tenant_indexes import build_tenant_indexes
from archivist.rag.store.pgvector.writing import delete_where, write_chunks
from archivist.rag.store.tenant import TENANT_KEY
from archivist.validation import MetadataFilter, check_positive_int

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PgVectorEngine"]

CONNECTION_WAIT_SECONDS = 10.0
"""Longest wait for a pooled connection: past it the call fails with psycopg_pool's
PoolTimeout (the database out of reach, or every connection busy) instead of hanging."""


class PgVectorEngine(PgVectorReading):
    """The engine of a `PgVectorStore` (see it for what each argument means)."""

    BUILD_MEMORY = 1 << 30
    """Most `maintenance_work_mem` (bytes) a build of a collection's shared HNSW index asks
    for: it asks for what the graph of the collection's rows takes (`GRAPH_ROW_BYTES` and
    the vector per row) up to this, never less than the server's setting. A graph larger
    than the memory is still built, more slowly."""
    GRAPH_ROW_BYTES = 1024
    """The memory an HNSW graph build takes per row besides its vector (m=16 neighbours;
    pgvector 0.8 takes about 750 bytes, the rest is margin)."""
    BUILD_WORKERS = 2
    """Parallel workers of a shared HNSW index build (`max_parallel_maintenance_workers`),
    within what the server allows. A parallel build takes its memory at once in the
    server's shared memory; where that is too small the build runs without workers."""

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
        if not isinstance(url, str) or not url.strip():
            raise InvalidArgumentError(
                f"url must be a PostgreSQL connection string, got {url!r}", argument="url"
            )
        self._url = url
        self._distance = check_distance(distance)
        self._prefix = check_prefix(table_prefix)
        self._registry = sql.Identifier(f"{self._prefix}_collections")
        self._max_connections = check_positive_int(max_connections, "max_connections")
        if tenant_key is not None and (not isinstance(tenant_key, str) or not tenant_key):
            raise InvalidArgumentError(
                f"tenant_key must be a metadata key or None, got {tenant_key!r}",
                argument="tenant_key",
            )
        self._tenant_key = tenant_key
        self._datatype = check_vector_datatype(vector_datatype)
        self._pool: AsyncConnectionPool | None = None
        self._collections: dict[str, Collection] = {}

    # Opening and closing

    async def open(self) -> None:
        if self._pool is not None:
            raise RuntimeError("PgVectorStore is already open")
        from psycopg_pool import AsyncConnectionPool

        await self._prepare_database()

        async def configure(connection: AsyncConnection[Any]) -> None:
            # pgvector's own adapter: vectors travel in binary, not as float8 arrays.
            from pgvector.psycopg import register_vector_async

            await register_vector_async(connection)
            await connection.set_autocommit(True)
            # Every statement planned for its own values, however often it ran before, so
            # a tenant's own indexes (`tenant_indexes`) are seen by a search in its scope.
            await connection.execute("SET plan_cache_mode = force_custom_plan")

        pool: AsyncConnectionPool = AsyncConnectionPool(
            self._url,
            min_size=1,
            max_size=self._max_connections,
            configure=configure,
            check=AsyncConnectionPool.check_connection,  # none that died while idle
            timeout=CONNECTION_WAIT_SECONDS,
            # A failed connection is retried (after 1, 2, 4 s...) only as long as a call waits,
            # then the next call tries afresh: back within seconds of the database's return,
            # however long the outage was.
            reconnect_timeout=CONNECTION_WAIT_SECONDS,
            open=False,
        )
        await pool.open(wait=True)
        self._pool = pool
        self._collections.clear()

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

    async def close(self) -> None:
        """Close the connection pool."""
        pool, self._pool = self._pool, None
        self._collections.clear()
        if pool is not None:
            await pool.close()

    def check_open(self) -> None:
        self._open()

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

    async def shape(self, name: str, *, fresh: bool = False) -> Collection | None:
        """The collection's registry row, remembered once read; a collection of an older
        storage version is converted first."""
        if not fresh and name in self._collections:
            return self._collections[name]
        row = await self._registry_row(name)
        if row is not None and int(row[4]) < STORAGE:
            await self._migrate(name)
            row = await self._registry_row(name)
        if row is None:
            self._collections.pop(name, None)
            return None
        found = Collection(
            int(row[0]),
            str(row[1]),
            bool(row[2]),
            check_term_layout(int(row[3])),
            tables=Tables.of(self._prefix, name),
            datatype=check_vector_datatype(row[5]),
        )
        self._collections[name] = found
        return found

    async def _registry_row(self, name: str) -> tuple[Any, ...] | None:
        async with self._open().connection() as connection:
            cursor = await connection.execute(
                sql.SQL(
                    "SELECT dimensions, distance, sparse, term_layout, storage, datatype FROM {} "
                    "WHERE name = %s"
                ).format(self._registry),
                [name],
            )
            return await cursor.fetchone()

    async def _migrate(self, name: str) -> None:
        """Convert collection `name` to the current storage version in one transaction,
        holding its write lock (unless another process did meanwhile)."""
        async with self._transaction() as connection:
            await self._lock(connection, "collection", name)
            cursor = await connection.execute(
                sql.SQL("SELECT storage FROM {} WHERE name = %s").format(self._registry), [name]
            )
            row = await cursor.fetchone()
            if row is None or int(row[0]) >= STORAGE:
                return
            for statement in migration_ddl(Tables.of(self._prefix, name)):
                await connection.execute(statement)
            await connection.execute(
                sql.SQL("UPDATE {} SET storage = %s WHERE name = %s").format(self._registry),
                [STORAGE, name],
            )

    async def create_collection(self, name: str, dimensions: int, sparse: bool) -> Collection:
        """The registry row and tables of a new collection, made under the lock on the
        collections unless another process made them first."""
        existing = await self.shape(name, fresh=True)
        if existing is None:
            async with self._transaction() as connection:
                await self._lock(connection, "collections")
                cursor = await connection.execute(
                    sql.SQL("SELECT 1 FROM {} WHERE name = %s").format(self._registry), [name]
                )
                if await cursor.fetchone() is None:
                    tables = Tables.of(self._prefix, name)
                    ddl = collection_ddl(tables, dimensions, self._distance, self._datatype)
                    for statement in ddl:
                        await connection.execute(statement)
                    await connection.execute(
                        sql.SQL(
                            "INSERT INTO {} "
                            "(name, dimensions, distance, sparse, term_layout, storage, datatype) "
                            "VALUES (%s, %s, %s, %s, %s, %s, %s)"
                        ).format(self._registry),
                        [
                            name,
                            dimensions,
                            self._distance,
                            sparse,
                            TERM_LAYOUT,
                            STORAGE,
                            self._datatype,
                        ],
                    )
            existing = await self.shape(name)
            if existing is None:
                raise missing_collection(name)  # dropped by another process meanwhile
        return existing

    async def delete_collection(self, name: str) -> None:
        self._collections.pop(name, None)
        tables = Tables.of(self._prefix, name)
        async with self._transaction() as connection:
            await self._lock(connection, "collections")
            await self._lock(connection, "collection", name)
            await connection.execute(
                sql.SQL("DROP TABLE IF EXISTS {}, {}, {}").format(
                    tables.df, tables.postings, tables.chunks
                )
            )
            await connection.execute(
                sql.SQL("DELETE FROM {} WHERE name = %s").format(self._registry), [name]
            )

    async def begin_bulk_load(self, collection: str) -> None:
        """Drop the collection's HNSW indexes (`bulk_load`) under its write lock; dense
        searches rank exactly until `optimize` builds them again."""
        found = await self.shape(collection)
        if found is None:
            raise missing_collection(collection)
        try:
            async with self._transaction() as connection:
                await self._lock(connection, "collection", collection)
                await drop_graphs(connection, found.tables)
        except errors.UndefinedTable:  # dropped by another process meanwhile
            self._collections.pop(collection, None)
            raise missing_collection(collection) from None

    async def optimize(self, collection: str) -> None:
        """Build the collection's shared HNSW index if it is missing (after a bulk load, or
        one cut short), holding its write lock; then indexes of its own (a graph, a term
        slots index) for every tenant holding at least `EXACT_BELOW` chunks (`tenant_indexes`,
        writes going on meanwhile); then refresh the planner's statistics (a filtered search
        sizes its graph walk by the table's row count)."""
        found = await self.shape(collection)
        if found is None:
            raise missing_collection(collection)
        try:
            async with self._open().connection() as connection:
                if not await has_shared_graph(connection, found.tables):
                    await self._build_shared_graph(connection, collection, found)
                if self._tenant_key is not None:
                    await build_tenant_indexes(
                        connection, found, self._tenant_key, self.EXACT_BELOW
                    )
                await connection.execute(sql.SQL("ANALYZE {}").format(found.tables.chunks))
        except errors.UndefinedTable:  # dropped by another process meanwhile
            self._collections.pop(collection, None)
            raise missing_collection(collection) from None

    async def _build_shared_graph(
        self, connection: AsyncConnection[Any], collection: str, found: Collection
    ) -> None:
        """Build the collection's shared HNSW index holding its write lock: with
        `BUILD_WORKERS` parallel workers, or with none when the server's shared memory cannot
        hold the graph (a container's small /dev/shm)."""
        for workers in dict.fromkeys((self.BUILD_WORKERS, 0)):
            try:
                async with connection.transaction():
                    await self._lock(connection, "collection", collection)
                    await build_shared_graph(
                        connection,
                        found.tables,
                        found.distance,
                        found.datatype,
                        bytes_per_row=found.vector_bytes + self.GRAPH_ROW_BYTES,
                        memory_cap=self.BUILD_MEMORY,
                        workers=workers,
                    )
                return
            except (errors.DiskFull, errors.OutOfMemory):
                if workers == 0:
                    raise

    # Writing

    async def scope(self, collection: str, metadata_filter: MetadataFilter | None) -> SqlScope:
        return where_metadata(metadata_filter)

    async def write(
        self,
        collection: str,
        shape: Collection,
        points: list[PointWrite],
        counts: Sequence[TermCounts | None],
        *,
        overwrites: bool = True,
    ) -> None:
        """Store `points` with their BM25 weights in one transaction, holding the
        collection's write lock."""
        async with self._transaction() as connection:
            await self._lock(connection, "collection", collection)
            await write_chunks(
                connection,
                self._registry,
                collection,
                shape,
                points,
                counts,
                overwrites=overwrites,
            )

    async def remove(
        self,
        collection: str,
        shape: Collection,
        scope: SqlScope | None,
        document_id: str | None,
        *,
        generation: str | None = None,
        keep: str | None = None,
    ) -> None:
        condition, params = scope or (sql.SQL("TRUE"), [])
        parts: list[sql.Composable] = [condition]
        for test, value in (
            ("c.document_id = %s", document_id),
            ("c.generation = %s", generation),
            ("c.generation <> %s", keep),
        ):
            if value is not None:
                parts.append(sql.SQL(test))
                params = [*params, value]
        async with self._transaction() as connection:
            await self._lock(connection, "collection", collection)
            await delete_where(
                connection, self._registry, collection, shape, sql.SQL(" AND ").join(parts), params
            )

    @asynccontextmanager
    async def document_lock(self, collection: str, document_id: str) -> AsyncIterator[None]:
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


def _redacted(url: str) -> str:
    """`url` without its password."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
