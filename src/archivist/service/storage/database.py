"""The service's tables (keys, knowledge bases, documents, jobs, chat sessions, the files and
vector stores of the OpenAI-compatible API) and engine set-up.

SQLAlchemy 2 Core gives one set of queries for SQLite (default) and PostgreSQL
(`--database`), including `SELECT ... FOR UPDATE SKIP LOCKED` where the backend has it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    make_url,
    text,
)

from archivist.errors import ConfigurationError

metadata = MetaData()

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(16), primary_key=True),
    Column("tenant", String(64), nullable=False, index=True),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float, nullable=True),
)

knowledge_bases = Table(
    "knowledge_bases",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("tenant", String(64), nullable=False),
    Column("name", String(64), nullable=False),
    Column("description", Text, nullable=False),
    Column("collection", String(64), nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("tenant", "name", name="uq_kb_tenant_name"),
)

documents = Table(
    "documents",
    metadata,
    Column("id", String(36), primary_key=True),
    Column(
        "kb_id",
        String(32),
        ForeignKey("knowledge_bases.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("tenant", String(64), nullable=False),
    Column("filename", String(255), nullable=False),
    Column("media_type", String(128), nullable=False),
    Column("path", Text, nullable=False),
    Column("size", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    Column("chunk_count", Integer, nullable=False, default=0),
    Column("error", Text, nullable=True),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)

jobs = Table(
    "jobs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column(
        "document_id",
        String(36),
        ForeignKey("documents.id", ondelete="CASCADE"),
        nullable=False,
        unique=True,
    ),
    Column("state", String(16), nullable=False, index=True),
    Column("owner", String(64), nullable=True),
    Column("lease_expires", Float, nullable=True),
    Column("attempts", Integer, nullable=False, default=0),
    Column("created_at", Float, nullable=False),
)


document_digests = Table(
    "document_digests",
    metadata,
    Column(
        "document_id",
        String(36),
        ForeignKey("documents.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("kb_id", String(32), nullable=False),
    Column("digest", String(64), nullable=False),
    UniqueConstraint("kb_id", "digest", name="uq_document_digest"),
)
"""Each upload's SHA-256, unique within its knowledge base: the same content uploaded twice
(on any replica, at once or not) is one document. Documents recorded before digests were
kept have no row."""

pending_files = Table(
    "pending_files",
    metadata,
    Column("folder", String(80), primary_key=True),
    Column("created_at", Float, nullable=False, index=True),
)
"""File-store folders in flight: an upload not yet recorded, or a deleted document's folder
not yet removed. A row outlives its grace period only when the process handling it died;
the sweeper then removes the folder and the row."""

idempotency_keys = Table(
    "idempotency_keys",
    metadata,
    Column("tenant", String(64), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("fingerprint", String(64), nullable=False),
    Column("document_ids", Text, nullable=False),
    Column("created_at", Float, nullable=False, index=True),
)
"""Upload requests by their `Idempotency-Key`, per tenant: a retry of the same request on
any replica answers with the documents the first one recorded."""

kb_settings = Table(
    "kb_settings",
    metadata,
    Column(
        "kb_id",
        String(32),
        ForeignKey("knowledge_bases.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("embedding_model", String(128), nullable=False),
    Column("chunk_size", Integer, nullable=True),
    Column("overlap", Integer, nullable=False),
)
"""How one knowledge base indexes; a knowledge base without a row uses the service's
defaults (those created before per-KB settings existed)."""

document_attributes = Table(
    "document_attributes",
    metadata,
    Column(
        "document_id",
        String(36),
        ForeignKey("documents.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("attributes", Text, nullable=False),
)
"""A document's attributes (JSON), stamped on its chunks' metadata when it is indexed."""

openai_files = Table(
    "openai_files",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("tenant", String(64), nullable=False, index=True),
    Column("filename", String(255), nullable=False),
    Column("purpose", String(16), nullable=False),
    Column("bytes", Integer, nullable=False),
    Column("path", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)
"""Files uploaded through the OpenAI-compatible API, kept in the file store until deleted."""

vector_stores = Table(
    "vector_stores",
    metadata,
    Column(
        "kb_id",
        String(32),
        ForeignKey("knowledge_bases.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("name", Text, nullable=False),
    Column("metadata", Text, nullable=False),
    Column("expires_days", Integer, nullable=True),
    Column("last_active_at", Float, nullable=False),
)
"""What the OpenAI-compatible API records of a knowledge base beyond the catalog: the name it
was given, its metadata and expiry; a knowledge base without a row is shown by its own."""

vector_store_files = Table(
    "vector_store_files",
    metadata,
    Column(
        "kb_id",
        String(32),
        ForeignKey("knowledge_bases.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("file_id", String(40), primary_key=True),
    Column("document_id", String(36), nullable=True, index=True),
    Column("batch_id", String(40), nullable=True, index=True),
    Column("attributes", Text, nullable=False),
    Column("status", String(16), nullable=True),
    Column("error_code", String(32), nullable=True),
    Column("error", Text, nullable=True),
    Column("created_at", Float, nullable=False),
)
"""A file added to a vector store: the document it became (its status is the document's), or
its own `status` (failed before it became one, or cancelled)."""

file_batches = Table(
    "vector_store_file_batches",
    metadata,
    Column("id", String(40), primary_key=True),
    Column(
        "kb_id",
        String(32),
        ForeignKey("knowledge_bases.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("created_at", Float, nullable=False),
    Column("cancelled_at", Float, nullable=True),
)

chat_sessions = Table(
    "chat_sessions",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("tenant", String(64), nullable=False, index=True),
    Column("title", String(200), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)

chat_answering = Table(
    "chat_answering",
    metadata,
    Column(
        "session_id",
        String(32),
        ForeignKey("chat_sessions.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("token", String(32), nullable=False),
    Column("started_at", Float, nullable=False),
)
"""The sessions answering a message now: one row a session, so one answer at a time across
every replica on the database."""

chat_messages = Table(
    "chat_messages",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column(
        "session_id",
        String(32),
        ForeignKey("chat_sessions.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("role", String(16), nullable=False),
    Column("content", Text, nullable=False),
    Column("citations", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)


def make_engine(url: str) -> Engine:
    """An engine for `url` with the service's tables created.

    SQLite runs in WAL mode with `synchronous=FULL` (a committed upload survives power
    loss), foreign keys on, and `BEGIN IMMEDIATE` for writes so concurrent writers queue
    on the busy timeout instead of failing.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed, connect_args={"timeout": 30})
        _sqlite_pragmas(engine)
    elif parsed.get_backend_name() == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        engine = create_engine(parsed, pool_size=10, max_overflow=20, pool_pre_ping=True)
    else:
        raise ConfigurationError(
            f"database URL {url!r}: use sqlite:///PATH or postgresql://USER@HOST:PORT/DB",
            setting="database_url",
        )
    metadata.create_all(engine)
    return engine


def _sqlite_pragmas(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # transactions are begun below
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        immediate = connection.get_execution_options().get("write", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


@contextmanager
def writing(engine: Engine) -> Iterator[Connection]:
    """A write transaction (committed on success, rolled back on error)."""
    with engine.connect().execution_options(write=True) as connection, connection.begin():
        yield connection


def lock_tenant(db: Connection, tenant: str) -> None:
    """Hold `tenant`'s write lock until `db`'s transaction ends, so a check of the tenant's
    totals and the write it allows are one step for every process on the database.

    PostgreSQL: a transaction-level advisory lock on the tenant's name. SQLite: nothing to
    do, since write transactions (`BEGIN IMMEDIATE`) already run one at a time."""
    if db.dialect.name == "postgresql":
        db.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:tenant, 0))"),
            {"tenant": tenant},
        )


@contextmanager
def reading(engine: Engine) -> Iterator[Connection]:
    """A read-only transaction."""
    with engine.connect() as connection, connection.begin():
        yield connection
