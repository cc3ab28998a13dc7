"""Tenant scope: which records a handle reads and writes when tenants share one collection.

The rule: every handle that writes files works in exactly one scope. A tenant's scope is the
records whose `tenant_id` equals it; the "no tenant" scope is the records without a
`tenant_id` (expressed natively as "key absent", never as "every record"). Document ids of
ingested files derive from (scope, path), so two scopes never share a document id.
"""

from __future__ import annotations

from archivist.errors import InvalidArgumentError
from archivist.rag.store.base import MetadataFilter

TENANT_KEY = "tenant_id"


def tenant_scope(tenant: str | None) -> MetadataFilter:
    """The metadata filter of `tenant`'s scope; None is the "no tenant" scope."""
    if tenant is not None and (not isinstance(tenant, str) or not tenant.strip()):
        raise InvalidArgumentError(
            f"tenant must be a non-empty string or None, got {tenant!r}", argument="tenant"
        )
    return {TENANT_KEY: tenant}
