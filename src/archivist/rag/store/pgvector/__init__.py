"""The vector store on PostgreSQL with pgvector: one database shared by every process."""

from archivist.rag.store.pgvector.store import PgVectorStore

__all__ = ["PgVectorStore"]
