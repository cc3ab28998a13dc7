"""Tenant-private document-embedding cache: no tenant can learn by timing what another holds.

One on-disk cache serves every tenant, but each entry's key includes the tenant that
indexed it, so identical content uploaded by two tenants is embedded twice: tenant B's
copy is never `ready` early because tenant A already holds those bytes. The tenant comes
from `TENANT`, which the indexer sets for each job.

Embedding calls made with `PRIORITY` set (the reserved worker's jobs: tenants that had
nothing running) go first: other calls wait to start while one runs, so a newcomer's small
file is not slowed by another tenant's backlog sharing the same embedder.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from contextvars import ContextVar
from pathlib import Path

from archivist.embedding import CachedEmbeddingModel, EmbeddingModelBase
from archivist.embedding.base import BatchItem, InputType
from archivist.embedding.response import EmbeddingResponse

TENANT: ContextVar[str | None] = ContextVar("archivist_cache_tenant", default=None)
"""The tenant whose documents are being embedded; None outside a tenant's job."""

PRIORITY: ContextVar[bool] = ContextVar("archivist_embed_priority", default=False)
"""Whether this task's embedding calls go before the others'."""

_NO_TENANT = "\x00no-tenant"  # not a valid tenant name, so it never matches one


class TenantCachedEmbeddingModel(CachedEmbeddingModel):
    """`CachedEmbeddingModel` whose entries are private to the current `TENANT`; calls
    made with `PRIORITY` start before waiting ones."""

    def __init__(self, inner: EmbeddingModelBase, cache_dir: str | Path) -> None:
        super().__init__(inner, cache_dir)
        self._urgent = 0
        self._no_urgent = asyncio.Event()
        self._no_urgent.set()

    async def _embed_items(
        self, items: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        if not PRIORITY.get():
            while self._urgent:
                await self._no_urgent.wait()
            return await super()._embed_items(items, input_type)
        self._urgent += 1
        self._no_urgent.clear()
        try:
            return await super()._embed_items(items, input_type)
        finally:
            self._urgent -= 1
            if not self._urgent:
                self._no_urgent.set()

    def _keys(self, items: Sequence[BatchItem], input_type: InputType) -> list[bytes]:
        salt = hashlib.sha256((TENANT.get() or _NO_TENANT).encode()).digest()
        return [hashlib.sha256(salt + key).digest() for key in super()._keys(items, input_type)]
