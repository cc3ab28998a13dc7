"""Tenant graphs: an HNSW index of its own (a partial index) for each tenant holding many
chunks of a collection.

A filtered search through the collection's one graph walks past other tenants' chunks, and
for a tenant holding a small share of a large collection it misses some of its best chunks
however wide its candidate list. A partial index over one tenant's rows is a graph of that
tenant alone; PostgreSQL's planner takes it for any search whose filter holds the tenant's
condition, written as `filter.where_metadata` writes it. Tenants with fewer chunks are ranked
exactly (`PgVectorReading.EXACT_BELOW`), so every tenant is served one way or the other.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from psycopg import AsyncConnection, sql

from archivist.rag.store.core.datatype import VectorDatatype
from archivist.rag.store.pgvector.filter import where_metadata
from archivist.rag.store.pgvector.schema import Tables, hnsw_ddl


def graph_name(tables: Tables, tenant: str) -> str:
    """The index name of `tenant`'s graph (a digest, so any tenant fits 63 characters)."""
    return f"{tables.base}_tg_{hashlib.blake2b(tenant.encode(), digest_size=8).hexdigest()}"


@asynccontextmanager
async def _building(connection: AsyncConnection[Any], tables: Tables) -> AsyncIterator[bool]:
    """Whether this session holds the lock on building `tables`' graphs (a session advisory
    lock, released on leaving); False while another process holds it."""
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


async def build_tenant_graphs(
    connection: AsyncConnection[Any],
    tables: Tables,
    distance: str,
    datatype: VectorDatatype,
    tenant_key: str,
    minimum: int,
) -> list[str]:
    """Build the graph of every tenant holding at least `minimum` chunks that has none yet
    (or whose build was cut short), without blocking writes (`CONCURRENTLY`, so
    `connection` must be in autocommit mode); returns the tenants whose graphs were built.
    Another process building this table's graphs meanwhile is left to it: none are built."""
    async with _building(connection, tables) as mine:
        if not mine:
            return []
        built = []
        for tenant, name, cut_short in await _missing(connection, tables, tenant_key, minimum):
            if cut_short:  # a build cut short leaves an invalid index behind
                await connection.execute(
                    sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name))
                )
            predicate, _ = where_metadata({tenant_key: tenant}, alias=None, literal=True)
            await connection.execute(
                hnsw_ddl(tables, distance, datatype, name=name, where=predicate)
            )
            built.append(tenant)
        return built


async def _missing(
    connection: AsyncConnection[Any], tables: Tables, tenant_key: str, minimum: int
) -> list[tuple[str, str, bool]]:
    """The tenants holding at least `minimum` chunks without a valid graph, largest first:
    each with its graph's index name and whether an invalid one is in the way."""
    cursor = await connection.execute(
        sql.SQL(
            "SELECT c.metadata ->> %s FROM {} c WHERE jsonb_typeof(c.metadata -> %s) = 'string' "
            "GROUP BY 1 HAVING count(*) >= %s ORDER BY count(*) DESC"
        ).format(tables.chunks),
        [tenant_key, tenant_key, minimum],
    )
    tenants = [str(tenant) for (tenant,) in await cursor.fetchall()]
    cursor = await connection.execute(
        "SELECT i.relname, x.indisvalid FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
        "WHERE x.indrelid = %s::regclass",
        [tables.chunks_name],
    )
    existing = {str(name): bool(valid) for name, valid in await cursor.fetchall()}
    named = [(tenant, graph_name(tables, tenant)) for tenant in tenants]
    return [(tenant, name, name in existing) for tenant, name in named if not existing.get(name)]
