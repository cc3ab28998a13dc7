"""Tenant indexes: for each tenant holding many chunks of a collection, partial indexes over
its rows alone, an HNSW graph and (in a collection with BM25 terms) a GIN over its term slots.

A filtered search through the collection's one graph walks past other tenants' chunks, and
for a tenant holding a small share of a large collection it misses some of its best chunks
however wide its candidate list; the tenant's own graph holds none of the others. Likewise
the collection's slots index finds every chunk holding a term, which a search must then
intersect with the tenant's rows (a bitmap of all of them, built for every term); the
tenant's own slots index finds its chunks holding the term directly. PostgreSQL's planner
takes a partial index for any statement whose filter holds the tenant's condition, written
as `filter.where_metadata` writes it. Tenants with fewer chunks are ranked exactly
(`PgVectorReading.EXACT_BELOW`) over the collection's indexes.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from psycopg import AsyncConnection, sql

from archivist.rag.store.pgvector.bulk_load import table_indexes
from archivist.rag.store.pgvector.filter import where_metadata
from archivist.rag.store.pgvector.schema import Collection, Tables, hnsw_ddl, slots_ddl

GRAPH, SLOTS = "tg", "tt"
"""The kinds of tenant index, as their names start after the collection's tables'."""


def tenant_index_name(tables: Tables, tenant: str, kind: str) -> str:
    """The name of `tenant`'s index of `kind` (a digest, so any tenant fits 63 characters)."""
    digest = hashlib.blake2b(tenant.encode(), digest_size=8).hexdigest()
    return f"{tables.base}_{kind}_{digest}"


@asynccontextmanager
async def _building(connection: AsyncConnection[Any], tables: Tables) -> AsyncIterator[bool]:
    """Whether this session holds the lock on building `tables`' tenant indexes (a session
    advisory lock, released on leaving); False while another process holds it."""
    lock = f"archivist-tenant-graphs\x1f{tables.chunks_name}"
    cursor = await connection.execute(
        "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [lock]
    )
    row = await cursor.fetchone()
    held = row is not None and bool(row[0])
    try:
        yield held
    finally:
        if held:
            await connection.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [lock])


async def build_tenant_indexes(
    connection: AsyncConnection[Any], found: Collection, tenant_key: str, minimum: int
) -> list[str]:
    """Build the indexes of every tenant holding at least `minimum` chunks that lacks one
    (or whose build was cut short), without blocking writes (`CONCURRENTLY`, so
    `connection` must be in autocommit mode); returns the tenants given an index. Another
    process building this collection's tenant indexes meanwhile is left to it."""
    kinds = (GRAPH, SLOTS) if found.sparse else (GRAPH,)
    async with _building(connection, found.tables) as mine:
        if not mine:
            return []
        built: dict[str, None] = {}
        for tenant, kind, name, cut_short in await _missing(
            connection, found.tables, tenant_key, minimum, kinds
        ):
            if cut_short:  # a build cut short leaves an invalid index behind
                await connection.execute(
                    sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name))
                )
            predicate, _ = where_metadata({tenant_key: tenant}, alias=None, literal=True)
            await connection.execute(
                hnsw_ddl(found.tables, found.distance, found.datatype, name=name, where=predicate)
                if kind == GRAPH
                else slots_ddl(found.tables, name=name, where=predicate)
            )
            built[tenant] = None
        return list(built)


async def _missing(
    connection: AsyncConnection[Any],
    tables: Tables,
    tenant_key: str,
    minimum: int,
    kinds: tuple[str, ...],
) -> list[tuple[str, str, str, bool]]:
    """The indexes of `kinds` missing (or invalid) for the tenants holding at least `minimum`
    chunks, largest tenant first: each as its tenant, kind, index name and whether an
    invalid one is in the way."""
    cursor = await connection.execute(
        sql.SQL(
            "SELECT c.metadata ->> %s FROM {} c WHERE jsonb_typeof(c.metadata -> %s) = 'string' "
            "GROUP BY 1 HAVING count(*) >= %s ORDER BY count(*) DESC"
        ).format(tables.chunks),
        [tenant_key, tenant_key, minimum],
    )
    tenants = [str(tenant) for (tenant,) in await cursor.fetchall()]
    existing = await table_indexes(connection, tables)
    named = [
        (tenant, kind, tenant_index_name(tables, tenant, kind))
        for tenant in tenants
        for kind in kinds
    ]
    return [
        (tenant, kind, name, name in existing)
        for tenant, kind, name in named
        if name not in existing or not existing[name].valid
    ]
