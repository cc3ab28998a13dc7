"""Vector stores."""

from archivist.rag.store.base import MetadataFilter, VectorStoreBase
from archivist.rag.store.capabilities import StoreCapabilities
from archivist.rag.store.core.arguments import SearchMode
from archivist.rag.store.file_lock import StoreLockedError
from archivist.rag.store.qdrant import QdrantStore

__all__ = [
    "MetadataFilter",
    "QdrantStore",
    "SearchMode",
    "StoreCapabilities",
    "StoreLockedError",
    "VectorStoreBase",
]
