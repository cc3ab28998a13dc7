"""The vector side of the service: its Qdrant store and a KnowledgeBase handle per record.

Isolation is structural twice over: every knowledge base has its own collection, named from
a random id (no tenant-chosen text reaches Qdrant), and every handle also carries the
tenant as a metadata filter, so even a wrong collection lookup could not return another
tenant's chunks.
"""

from __future__ import annotations

from archivist.embedding import EmbeddingModelBase
from archivist.rag import KnowledgeBase, QdrantStore
from archivist.rag.store.base import MetadataFilter, VectorStoreBase
from archivist.rag.store.process import ProcessStore
from archivist.service.settings import ServiceSettings
from archivist.service.storage.catalog import KBRecord

TENANT_KEY = "tenant_id"


def open_store(settings: ServiceSettings) -> VectorStoreBase:
    """The store `settings` names (not yet entered): a Qdrant server, PostgreSQL with
    pgvector, or Qdrant Edge on disk.

    Qdrant Edge runs in a child process (`ProcessStore`): the engine holds the GIL while it
    indexes a segment, and in the service's own process that would stop every request.
    """
    if settings.pgvector_url:
        from archivist.rag.store.pgvector import PgVectorStore  # the pgvector extra's

        return PgVectorStore(settings.pgvector_url)
    if settings.qdrant_url:
        return QdrantStore(url=settings.qdrant_url, api_key=settings.qdrant_api_key)
    return ProcessStore.of(
        QdrantStore,
        path=settings.service_dir / "qdrant",
        max_open_collections=settings.open_collections,
    )


def tenant_scope(kb: KBRecord) -> MetadataFilter:
    """The metadata filter confining a handle on `kb` to its tenant."""
    return {TENANT_KEY: kb.tenant}


def kb_handle(kb: KBRecord, store: VectorStoreBase, model: EmbeddingModelBase) -> KnowledgeBase:
    """A handle on `kb`'s collection confined to its tenant."""
    return KnowledgeBase(
        name=kb.name,
        description=kb.description,
        embedding_model=model,
        vector_store=store,
        collection=kb.collection,
        metadata_filter=tenant_scope(kb),
    )
