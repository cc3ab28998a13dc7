"""Bulk loading: a collection's HNSW graphs dropped while a large batch is written, built once
at its end.

An HNSW index takes each row as it is written, a graph search per row, while building it over
rows already there costs a fraction of that. With no graph a dense search ranks the chunks in
scope exactly (a sort of their distances), so searches stay correct meanwhile, only slower on
a large collection. Nothing records that a load is under way: a missing shared graph is
built by the next `optimize`, whoever calls it, so a load cut short by a crash is repaired
by the next optimize, and two processes loading one collection both end well.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from psycopg import AsyncConnection, sql

from archivist.rag.store.core.datatype import VectorDatatype
from archivist.rag.store.pgvector.schema import Tables, hnsw_ddl


class TableIndex(NamedTuple):
    """One index of a chunk table: whether it is valid (a `CONCURRENTLY` build cut short
    leaves an invalid one) and its access method ("hnsw", "gin", "btree")."""

    valid: bool
    method: str


async def table_indexes(connection: AsyncConnection[Any], tables: Tables) -> dict[str, TableIndex]:
    """Every index of `tables`' chunks by name, as PostgreSQL's catalog lists it."""
    cursor = await connection.execute(
        "SELECT i.relname, x.indisvalid, a.amname FROM pg_index x "
        "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am a ON a.oid = i.relam "
        "WHERE x.indrelid = %s::regclass",
        [tables.chunks_name],
    )
    return {
        str(name): TableIndex(bool(valid), str(method))
        for name, valid, method in await cursor.fetchall()
    }


async def drop_graphs(connection: AsyncConnection[Any], tables: Tables) -> None:
    """Drop every HNSW index of `tables`' chunks, in the caller's transaction."""
    for name, index in sorted((await table_indexes(connection, tables)).items()):
        if index.method == "hnsw":
            await connection.execute(
                sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name))
            )


async def has_shared_graph(connection: AsyncConnection[Any], tables: Tables) -> bool:
    """Whether `tables`' shared HNSW index exists."""
    return f"{tables.base}_hnsw" in await table_indexes(connection, tables)


async def build_shared_graph(
    connection: AsyncConnection[Any],
    tables: Tables,
    distance: str,
    datatype: VectorDatatype,
    *,
    bytes_per_row: int,
    memory_cap: int,
    workers: int,
) -> None:
    """Build `tables`' shared HNSW index unless it exists, in the caller's transaction (writes
    to the table wait meanwhile): with `maintenance_work_mem` raised to what the graph of
    the table's rows takes (`bytes_per_row` each) within `memory_cap` bytes, never lowered,
    and up to `workers` parallel workers (a parallel build allocates that memory at once
    in shared memory)."""
    cursor = await connection.execute(sql.SQL("SELECT count(*) FROM {}").format(tables.chunks))
    row = await cursor.fetchone()
    wanted = min((0 if row is None else int(row[0])) * bytes_per_row, memory_cap)
    await connection.execute(
        "SELECT set_config('maintenance_work_mem', (greatest(pg_size_bytes("
        "current_setting('maintenance_work_mem')), %s::bigint) / 1024)::text || 'kB', true)",
        [wanted],
    )
    await connection.execute(
        "SELECT set_config('max_parallel_maintenance_workers', %s, true)", [str(workers)]
    )
    await connection.execute(hnsw_ddl(tables, distance, datatype))
