"""The document-embedding cache is private per tenant: content one tenant indexed is a
cache miss for another (no timing signal), and a hit for the same tenant."""

from __future__ import annotations

import asyncio
from pathlib import Path

from archivist.embedding.registry import DEFAULT_EMBEDDING_MODEL
from archivist.service.retrieval.embedding import SplitModel, service_model
from archivist.service.retrieval.tenant_cache import TENANT

TEXTS = ["Quarterly invoices of the Lisbon office.", "发票归档规则：保存七年。"]


async def embed_as(model: SplitModel, tenant: str) -> tuple[int, list[list[float]]]:
    """(inputs served from the cache, vectors) for `tenant` embedding TEXTS as documents."""
    TENANT.set(tenant)
    before = model.documents.totals.cached_inputs
    response = await model(TEXTS, "document")
    return model.documents.totals.cached_inputs - before, response.embeddings


def test_another_tenants_identical_content_is_not_a_cache_hit(tmp_path: Path) -> None:
    model = service_model(DEFAULT_EMBEDDING_MODEL, str(tmp_path / "cache"), 1)
    assert isinstance(model, SplitModel)

    async def scenario() -> None:
        hits_a, vectors_a = await embed_as(model, "tenant-a")
        again_a, _ = await embed_as(model, "tenant-a")
        hits_b, vectors_b = await embed_as(model, "tenant-b")
        assert (hits_a, again_a, hits_b) == (0, len(TEXTS), 0)
        assert vectors_a == vectors_b  # same model, same vectors: only the cache is split

    asyncio.run(scenario())
