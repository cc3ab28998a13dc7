"""What `PgVectorStore` is built on: the connection pool, the collections (a registry row and
three tables each) and the writes (chunks with their BM25 postings, crash-safe replace, delete)."""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Self

from psycopg import AsyncConnection, OperationalError, sql

from archivist._util.off_loop import off_loop
from archivist.errors import InvalidArgumentError
from archivist.rag.record import VectorRecord
from archivist.rag.store.base import MetadataFilter
from archivist.rag.store.core.arguments import (
    check_document_arguments,
)
from archivist.rag.store.core.bm25 import TermCounts, check_term_layout
from archivist.rag.store.core.distance import check_distance
from archivist.rag.store.core.generations import (
    new_generation,
    write_generation,
)
from archivist.rag.store.core.points import PointWrite, points_for
from archivist.rag.store.core.shaped import ShapedStore
from archivist.rag.store.core.terms import TERM_LAYOUT
from archivist.rag.store.pgvector.filter import where_metadata
from archivist.rag.store.pgvector.schema import (
    Tables,
    check_prefix,
    collection_ddl,
    registry_ddl,
)
from archivist.validation import (
    check_collection_name,
    check_positive_int,
)

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

from archivist.rag.store.core.points import term_counts
from archivist.rag.store.pgvector.schema import Collection
from archivist.rag.store.pgvector.writing import delete_where, write_chunks

__all__ = ["PgVectorCollections"]


class PgVectorCollections(ShapedStore[Collection]):
    """The pool, the collections and the writes of a `PgVectorStore` (see it); searching and
    reading are `PgVectorStore`'s."""

    WRITE_BATCH = 256
    """Chunks per write transaction."""

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
        super().__init__()
        self._url = url
        self._distance = check_distance(distance)
        self._prefix = check_prefix(table_prefix)
        self._registry = sql.Identifier(f"{self._prefix}_collections")
        self._max_connections = check_positive_int(max_connections, "max_connections")
        self._pool: AsyncConnectionPool | None = None
        self._collections: dict[str, Collection] = {}

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

    async def _shape(self, name: str, *, fresh: bool = False) -> Collection | None:
        """The collection's registry row, remembered once read."""
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
        found = Collection(
            int(row[0]),
            str(row[1]),
            bool(row[2]),
            check_term_layout(int(row[3])),
            tables=Tables.of(self._prefix, name),
        )
        self._collections[name] = found
        return found

    async def create_collection(self, name: str, dimensions: int, *, sparse: bool = True) -> None:
        """Create collection `name` for `dimensions`-d vectors, with BM25 terms for hybrid
        search unless `sparse` is False; a no-op if it exists with the same dimensions."""
        self._check_new_collection(name, dimensions, sparse)
        existing = await self._shape(name, fresh=True)
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
        self._check_same_dimensions(name, existing, dimensions)

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
        found: Collection,
        records: Sequence[VectorRecord],
        points: list[PointWrite],
    ) -> None:
        """Store `points` with their BM25 postings in the caller's transaction, holding the
        collection's write lock."""
        await self._lock(connection, "collection", collection)
        counts: list[TermCounts | None] = [None] * len(points)
        if found.sparse:  # Python per chunk
            encoder = self._encoder(found)
            counts = await off_loop(functools.partial(term_counts, encoder, records), len(records))
        await write_chunks(connection, self._registry, collection, found, points, counts)

    async def _delete(
        self, collection: str, found: Collection, condition: sql.Composable, params: list[Any]
    ) -> None:
        async with self._transaction() as connection:
            await self._lock(connection, "collection", collection)
            await delete_where(connection, self._registry, collection, found, condition, params)

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
        found = await self._shape(collection)
        if found is None:
            return
        async with self._document_lock(collection, document_id):
            await self._delete(
                collection,
                found,
                sql.SQL("c.document_id = %s AND {}").format(scope),
                [document_id, *scope_params],
            )


def _redacted(url: str) -> str:
    """`url` without its password."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
