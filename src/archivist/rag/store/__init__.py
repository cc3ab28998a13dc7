"""Vector stores."""

from archivist.rag.store.base import MetadataFilter, VectorStoreBase

__all__ = ["MetadataFilter", "VectorStoreBase"]
