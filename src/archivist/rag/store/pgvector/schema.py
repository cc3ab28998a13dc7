"""The tables of a `PgVectorStore`: a registry of collections, and three tables per collection.

    {prefix}_collections   one row per collection: name, dimensions, distance, whether it has
                           BM25 terms and their term layout (`archivist.rag.store.core.terms`),
                           and the running totals BM25 needs (chunks with terms, their
                           summed length)
    {table}_chunks         one row per chunk: the same fields as the Qdrant payload (see
                           `core/layout.py`), metadata as JSONB (GIN index), the dense vector
                           (HNSW index) and the chunk's length in BM25 terms
    {table}_terms          the BM25 postings: (term, chunk, weight), the weight being BM25's
                           term-frequency part; the primary key (term, chunk) is the inverted index
    {table}_df             document frequency per term, kept exact by every write and delete

`{table}` is derived from a digest of the collection name, so any valid name fits PostgreSQL's
63-character identifiers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from psycopg import sql

from archivist.errors import InvalidArgumentError
from archivist.rag.store.core.shaped import CollectionShape

DISTANCE_OPERATORS = {
    "Cosine": ("<=>", "vector_cosine_ops"),
    "Dot": ("<#>", "vector_ip_ops"),
    "Euclid": ("<->", "vector_l2_ops"),
    "Manhattan": ("<+>", "vector_l1_ops"),
}
"""pgvector's distance operator and HNSW operator class for each distance name."""


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
    def terms(self) -> sql.Identifier:
        return self.named("terms")

    @property
    def df(self) -> sql.Identifier:
        return self.named("df")


def registry_ddl(registry: sql.Identifier) -> list[sql.Composed]:
    """The collections registry table; registries made before term layouts were recorded
    get the column, their collections layout 1."""
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
    ]


def collection_ddl(tables: Tables, dimensions: int, distance: str) -> list[sql.Composed]:
    """The statements creating one collection's tables and indexes."""
    _, opclass = DISTANCE_OPERATORS[distance]
    chunks, terms, df = tables.chunks, tables.terms, tables.df
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
                embedding vector({}) NOT NULL
            )"""
        ).format(chunks, sql.Literal(dimensions)),
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
        # Qdrant's defaults (m=16, ef_construct=100), so both stores build alike graphs.
        sql.SQL(
            "CREATE INDEX {} ON {} USING hnsw (embedding {}) WITH (m = 16, ef_construction = 100)"
        ).format(tables.named("hnsw"), chunks, sql.SQL(opclass)),
        sql.SQL(
            """CREATE TABLE {} (
                term bigint NOT NULL,
                chunk uuid NOT NULL REFERENCES {} (id) ON DELETE CASCADE,
                weight real NOT NULL,
                PRIMARY KEY (term, chunk)
            )"""
        ).format(terms, chunks),
        sql.SQL("CREATE INDEX {} ON {} (chunk)").format(tables.named("terms_chunk"), terms),
        sql.SQL("CREATE TABLE {} (term bigint PRIMARY KEY, df bigint NOT NULL)").format(df),
    ]


@dataclass(frozen=True)
class Collection(CollectionShape):
    """One collection's registry row: its shape and its tables."""

    tables: Tables = field(kw_only=True)
