"""Vector stores.

The engines are imported on first use, so importing one (or the contract) loads no other.
"""

from archivist._util.lazy import lazy_submodule_exports
from archivist.rag.store.base import MetadataFilter, VectorStoreBase
from archivist.rag.store.capabilities import StoreCapabilities
from archivist.rag.store.core.arguments import SearchMode
from archivist.rag.store.file_lock import StoreLockedError

__getattr__, __dir__ = lazy_submodule_exports(__name__, {"qdrant": ["QdrantStore"]})

__all__ = [
    "MetadataFilter",
    "QdrantStore",
    "SearchMode",
    "StoreCapabilities",
    "StoreLockedError",
    "VectorStoreBase",
]
