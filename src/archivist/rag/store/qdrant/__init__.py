"""The Qdrant vector store: one `QdrantStore` over two engines, Qdrant Edge in-process
(`edge/`) and a Qdrant server through qdrant-client (`client/`), sharing one point layout,
filter language and BM25 encoder."""

from archivist.rag.store.file_lock import StoreLockedError
from archivist.rag.store.qdrant.store import QdrantStore

__all__ = ["QdrantStore", "StoreLockedError"]
