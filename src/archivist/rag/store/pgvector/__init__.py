"""The vector store on PostgreSQL with pgvector: one database shared by every process."""

from archivist._util.extras import EXTRAS, require

for _module in EXTRAS["pgvector"]:  # a core install says which extra brings them
    require("pgvector", _module, "PgVectorStore")

from archivist.rag.store.pgvector.store import PgVectorStore  # noqa: E402

__all__ = ["PgVectorStore"]
