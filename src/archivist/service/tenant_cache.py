"""Tenant-private document-embedding cache: no tenant can learn by timing what another holds.

One on-disk cache serves every tenant, but each entry's key includes the tenant that
indexed it, so identical content uploaded by two tenants is embedded twice: tenant B's
copy is never `ready` early because tenant A already holds those bytes. The tenant comes
from `TENANT`, which the indexer sets for each job.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from contextvars import ContextVar

from archivist.embedding import CachedEmbeddingModel
from archivist.embedding.base import BatchItem, InputType

TENANT: ContextVar[str | None] = ContextVar("archivist_cache_tenant", default=None)
"""The tenant whose documents are being embedded; None outside a tenant's job."""

_NO_TENANT = "\x00no-tenant"  # not a valid tenant name, so it never matches one


class TenantCachedEmbeddingModel(CachedEmbeddingModel):
    """`CachedEmbeddingModel` whose entries are private to the current `TENANT`."""

    def _keys(self, items: Sequence[BatchItem], input_type: InputType) -> list[bytes]:
        salt = hashlib.sha256((TENANT.get() or _NO_TENANT).encode()).digest()
        return [hashlib.sha256(salt + key).digest() for key in super()._keys(items, input_type)]
