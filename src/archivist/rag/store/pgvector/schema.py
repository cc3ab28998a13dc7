"""The tables of a `PgVectorStore`: a registry of collections, and two tables per collection.

    {prefix}_collections   one row per collection: name, dimensions, distance, whether it has
                           BM25 terms and their term layout (`archivist.rag.store.core.terms`),
                           the running totals BM25 needs (chunks with terms, their summed
                           length), its vector datatype and the storage version of its tables
    {table}_chunks         one row per chunk: the same fields as the Qdrant payload (see
                           `core/layout.py`), metadata as JSONB (GIN index), the dense vector
                           (`halfvec` for float16, `vector` for float32; HNSW index), the
                           chunk's length in BM25 terms, and its BM25 terms twice: `slots`,
                           the term slots it holds (GIN index: which chunks hold a term), and
                           `bm25`, a pgvector `sparsevec` of BM25's term-frequency part by slot
                           (a query's IDF weights by slot make its BM25 score one inner product)
    {table}_df             one row per term ever written: its slot (the term's position in
                           `bm25`, as term ids do not fit sparsevec's dimensions), its document
                           frequency, kept exact by every write and delete, and an upper bound
                           of its weight in any chunk (which lets a search skip chunks that
                           cannot reach the results)

`{table}` is derived from a digest of the collection name, so any valid name fits PostgreSQL's
63-character identifiers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from pgvector import HalfVector
from psycopg import sql

from archivist.errors import InvalidArgumentError
from archivist.rag.store.core.datatype import VectorDatatype
from archivist.rag.store.core.engine import CollectionShape

DISTANCE_OPERATORS = {
    "Cosine": ("<=>", "cosine_ops"),
    "Dot": ("<#>", "ip_ops"),
    "Euclid": ("<->", "l2_ops"),
    "Manhattan": ("<+>", "l1_ops"),
}
"""pgvector's distance operator and HNSW operator class (after the type's name) for each
distance name."""

VECTOR_TYPES: dict[VectorDatatype, str] = {"float16": "halfvec", "float32": "vector"}
"""pgvector's column type for each vector datatype."""


def vector_value(datatype: VectorDatatype, values: Sequence[float]) -> HalfVector | np.ndarray:
    """A dense vector as pgvector's adapter sends a `datatype` vector (binary)."""
    array = np.asarray(values, dtype=np.float32)
    return HalfVector(array) if datatype == "float16" else array

SLOT_DIMENSIONS = 1_000_000_000
"""The dimensions of every `bm25` sparsevec (pgvector's largest): slots count from 0."""

STORAGE = 2
"""The storage version of new collections: 1 = BM25 postings in a `{table}_terms` table
(term, chunk, weight); 2 = `slots` and `bm25` in the chunk row. A collection of version 1
is converted when a store first reads its registry row (`migration_ddl`)."""


def check_prefix(prefix: object) -> str:
    """`prefix` if it is a safe table-name prefix (lower-case letters, digits, '_')."""
    if (
        not isinstance(prefix, str)
        or not 1 <= len(prefix) <= 24
        or not prefix[0].isalpha()
        or not all(c.islower() or c.isdigit() or c == "_" for c in prefix)
    ):
        raise InvalidArgumentError(
            f"table_prefix must be 1-24 lower-case letters, digits or '_', got {prefix!r}",
            argument="table_prefix",
        )
    return prefix


@dataclass(frozen=True)
class Tables:
    """The SQL identifiers of one collection's tables."""

    base: str

    @classmethod
    def of(cls, prefix: str, collection: str) -> Tables:
        digest = hashlib.blake2b(collection.encode(), digest_size=8).hexdigest()
        return cls(f"{prefix}_{digest}")

    def named(self, suffix: str) -> sql.Identifier:
        """The identifier of this collection's table or index `suffix`."""
        return sql.Identifier(f"{self.base}_{suffix}")

    @property
    def chunks(self) -> sql.Identifier:
        return self.named("chunks")

    @property
    def chunks_name(self) -> str:
        """The chunk table's name as `regclass` reads it (the names need no quoting)."""
        return f"{self.base}_chunks"

    @property
    def df(self) -> sql.Identifier:
        return self.named("df")

    @property
    def postings(self) -> sql.Identifier:
        """The postings table of storage version 1, gone once the collection is converted."""
        return self.named("terms")


def registry_ddl(registry: sql.Identifier) -> list[sql.Composed]:
    """The collections registry table; registries made before term layouts (or storage
    versions, or datatypes) were recorded get the column, their collections layout 1
    (storage 1, float32 vectors)."""
    return [
        sql.SQL(
            """CREATE TABLE IF NOT EXISTS {} (
                name text PRIMARY KEY,
                dimensions integer NOT NULL,
                distance text NOT NULL,
                sparse boolean NOT NULL,
                sparse_chunks bigint NOT NULL DEFAULT 0,
                sparse_tokens bigint NOT NULL DEFAULT 0
            )"""
        ).format(registry),
        sql.SQL(
            "ALTER TABLE {} ADD COLUMN IF NOT EXISTS term_layout integer NOT NULL DEFAULT 1"
        ).format(registry),
        sql.SQL(
            "ALTER TABLE {} ADD COLUMN IF NOT EXISTS storage integer NOT NULL DEFAULT 1"
        ).format(registry),
        sql.SQL(
            "ALTER TABLE {} ADD COLUMN IF NOT EXISTS datatype text NOT NULL DEFAULT 'float32'"
        ).format(registry),
    ]


def hnsw_ddl(
    tables: Tables,
    distance: str,
    datatype: VectorDatatype,
    *,
    name: str | None = None,
    where: sql.Composable | None = None,
) -> sql.Composed:
    """The statement creating the collection's HNSW index unless it exists, or (`name`,
    `where`) a partial one over the rows `where` holds, built without blocking writes.
    Qdrant's defaults (m=16, ef_construct=100), so both stores build alike graphs."""
    _, opclass = DISTANCE_OPERATORS[distance]
    statement = sql.SQL(
        "CREATE INDEX {concurrently} IF NOT EXISTS {index} ON {chunks} "
        "USING hnsw (embedding {opclass}) WITH (m = 16, ef_construction = 100)"
    ).format(
        concurrently=sql.SQL("" if where is None else "CONCURRENTLY"),
        index=tables.named("hnsw") if name is None else sql.Identifier(name),
        chunks=tables.chunks,
        opclass=sql.SQL(f"{VECTOR_TYPES[datatype]}_{opclass}"),
    )
    return statement if where is None else sql.SQL("{} WHERE {}").format(statement, where)


def collection_ddl(
    tables: Tables, dimensions: int, distance: str, datatype: VectorDatatype
) -> list[sql.Composed]:
    """The statements creating one collection's tables and indexes."""
    chunks = tables.chunks
    return [
        sql.SQL(
            """CREATE TABLE {} (
                id uuid PRIMARY KEY,
                document_id text NOT NULL,
                generation text NOT NULL,
                chunk_index integer NOT NULL,
                total_chunks integer NOT NULL,
                source text NOT NULL,
                content text NOT NULL,
                metadata jsonb NOT NULL,
                terms integer NOT NULL DEFAULT 0,
                embedding {}({}) NOT NULL,
                slots integer[],
                bm25 sparsevec
            )"""
        ).format(chunks, sql.SQL(VECTOR_TYPES[datatype]), sql.Literal(dimensions)),
        # Vectors inline in the row where they fit (not TOASTed beside long chunk texts), so
        # an exact scan or a filtered re-rank reads one page per chunk.
        sql.SQL("ALTER TABLE {} ALTER COLUMN embedding SET STORAGE MAIN").format(chunks),
        sql.SQL("CREATE INDEX {} ON {} (document_id, chunk_index)").format(
            tables.named("doc"), chunks
        ),
        sql.SQL("CREATE INDEX {} ON {} (generation)").format(tables.named("gen"), chunks),
        sql.SQL("CREATE INDEX {} ON {} USING gin (metadata jsonb_path_ops)").format(
            tables.named("meta"), chunks
        ),
        hnsw_ddl(tables, distance, datatype),
        slots_ddl(tables),
        *_df_ddl(tables),
    ]


def slots_ddl(
    tables: Tables, *, name: str | None = None, where: sql.Composable | None = None
) -> sql.Composed:
    """The statement creating the GIN index over the chunks' term slots (which chunks hold a
    term), or (`name`, `where`) a partial one over the rows `where` holds, built without
    blocking writes."""
    statement = sql.SQL(
        "CREATE INDEX {concurrently} IF NOT EXISTS {index} ON {chunks} USING gin (slots)"
    ).format(
        concurrently=sql.SQL("" if where is None else "CONCURRENTLY"),
        index=tables.named("slots") if name is None else sql.Identifier(name),
        chunks=tables.chunks,
    )
    return statement if where is None else sql.SQL("{} WHERE {}").format(statement, where)


def _df_ddl(tables: Tables) -> list[sql.Composed]:
    # Room on every page, so the updates of a term's counts stay on its page (HOT updates).
    return [
        sql.SQL(
            """CREATE TABLE {} (
                term bigint PRIMARY KEY,
                slot integer GENERATED ALWAYS AS IDENTITY (MINVALUE 0 START WITH 0) UNIQUE,
                df bigint NOT NULL,
                weight_bound real NOT NULL
            ) WITH (fillfactor = 50)"""
        ).format(tables.df)
    ]


def migration_ddl(tables: Tables) -> list[sql.Composed]:
    """The statements converting a collection of storage version 1 into the current one, in
    one transaction: every term gets a slot and its weight bound, every chunk its `slots` and
    `bm25` from its postings, and the postings table is dropped."""
    chunks, df, postings = tables.chunks, tables.df, tables.postings
    renamed = sql.Identifier(f"{tables.base}_df_v1")
    return [
        sql.SQL("ALTER TABLE {} ADD COLUMN slots integer[], ADD COLUMN bm25 sparsevec").format(
            chunks
        ),
        sql.SQL("ALTER TABLE {} RENAME TO {}").format(df, renamed),
        sql.SQL("ALTER INDEX {} RENAME TO {}").format(
            sql.Identifier(f"{tables.base}_df_pkey"), sql.Identifier(f"{tables.base}_df_v1_pkey")
        ),
        *_df_ddl(tables),
        sql.SQL(
            "INSERT INTO {df} (term, df, weight_bound) "
            "SELECT d.term, d.df, coalesce(p.bound, 0) FROM {renamed} d LEFT JOIN "
            "(SELECT term, max(weight) AS bound FROM {postings} GROUP BY term) p "
            "ON p.term = d.term ORDER BY d.term"
        ).format(df=df, renamed=renamed, postings=postings),
        sql.SQL(
            "UPDATE {chunks} c SET slots = v.slots, bm25 = v.bm25 FROM ("
            "SELECT p.chunk, array_agg(d.slot ORDER BY d.slot) AS slots, "
            "('{{' || string_agg((d.slot + 1) || ':' || p.weight, ',' ORDER BY d.slot) "
            "|| '}}/' || {dimensions})::sparsevec AS bm25 "
            "FROM {postings} p JOIN {df} d ON d.term = p.term GROUP BY p.chunk) v "
            "WHERE c.id = v.chunk"
        ).format(
            chunks=chunks,
            postings=postings,
            df=df,
            dimensions=sql.Literal(SLOT_DIMENSIONS),
        ),
        sql.SQL("DROP TABLE {}, {}").format(postings, renamed),
        slots_ddl(tables),
    ]


@dataclass(frozen=True)
class Collection(CollectionShape):
    """One collection's registry row: its shape, how it keeps its vectors, and its tables."""

    tables: Tables = field(kw_only=True)
    datatype: VectorDatatype = field(kw_only=True, default="float32")

    @property
    def vector_type(self) -> str:
        """pgvector's type of the collection's dense vectors."""
        return VECTOR_TYPES[self.datatype]

    @property
    def vector_bytes(self) -> int:
        """The bytes of one dense vector's values as the collection keeps them."""
        return self.dimensions * (2 if self.datatype == "float16" else 4)
