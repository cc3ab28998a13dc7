"""Per-tenant quota checks: knowledge bases, documents and stored bytes.

Defaults apply to every tenant; `ServiceSettings.tenant_quotas` overrides them for named
tenants. An upload or a new knowledge base that would cross a quota is refused with 403
and a message naming the quota, the use and the limit; nothing is stored. The checks run on
a connection: the catalog runs them again inside the write they allow, under the tenant's
lock, so concurrent uploads cannot pass one check each and together cross the quota.
"""

from __future__ import annotations

from sqlalchemy import Connection, func, select

from archivist.service.errors import QuotaExceeded
from archivist.service.quota import Quota
from archivist.service.storage.database import documents, knowledge_bases


def check_new_kb(db: Connection, tenant: str, quota: Quota) -> None:
    """Raise QuotaExceeded if `tenant` may not create another knowledge base."""
    count = db.execute(select(func.count()).where(knowledge_bases.c.tenant == tenant)).scalar_one()
    if count + 1 > quota.knowledge_bases:
        raise QuotaExceeded(
            f"quota: {tenant} has {count} knowledge bases, the limit is "
            f"{quota.knowledge_bases}; delete one or ask the operator to raise the quota",
            quota="knowledge_bases",
        )


def check_new_documents(db: Connection, tenant: str, quota: Quota, files: int, size: int) -> None:
    """Raise QuotaExceeded if `tenant` may not store `files` more files of `size` bytes."""
    count, stored = db.execute(
        select(func.count(), func.coalesce(func.sum(documents.c.size), 0)).where(
            documents.c.tenant == tenant
        )
    ).one()
    if count + files > quota.documents:
        raise QuotaExceeded(
            f"quota: {tenant} has {count} documents, the limit is {quota.documents}; "
            "delete some or ask the operator to raise the quota",
            quota="documents",
        )
    if stored + size > quota.storage_bytes:
        raise QuotaExceeded(
            f"quota: {tenant} stores {stored} bytes and this upload adds {size}, the limit "
            f"is {quota.storage_bytes}; delete some documents or ask the operator",
            quota="storage_bytes",
        )
