"""Which job a free worker takes next: fair across tenants, oldest first within one.

The tenant chosen is the one with the fewest jobs running now (on any replica), then the
fewest jobs waiting, then the oldest waiting job. So one tenant's 5,000-file backlog
cannot keep another tenant's single file waiting: as soon as a worker is free, the
tenant with fewer jobs in the system goes first, and a tenant already being served yields
to one that is not. With two or more workers, one of them is reserved for tenants that have
nothing running, so a newcomer never waits for another tenant's job to finish.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, and_, func, or_, select, true
from sqlalchemy.sql.elements import ColumnElement

from archivist.service.storage.database import documents, jobs

_CANDIDATE_TENANTS = 8
"""Tenants tried in order when another replica holds the first one's jobs locked."""


def claimable(now: float) -> ColumnElement[bool]:
    """Jobs that may be leased now: queued, or running under an expired lease."""
    return or_(
        jobs.c.state == "queued",
        and_(jobs.c.state == "running", jobs.c.lease_expires < now),
    )


def next_job(db: Connection, now: float, idle_tenants_only: bool = False) -> Any | None:
    """The (id, document_id, attempts) row of the job to lease next, locked; None if none.
    `idle_tenants_only`: only from tenants with no job running (a reserved worker's pick)."""
    joined = jobs.join(documents, jobs.c.document_id == documents.c.id)
    running = (
        select(documents.c.tenant, func.count().label("running"))
        .select_from(joined)
        .where(jobs.c.state == "running", jobs.c.lease_expires >= now)
        .group_by(documents.c.tenant)
        .subquery()
    )
    waiting = (
        select(
            documents.c.tenant,
            func.count().label("waiting"),
            func.min(jobs.c.id).label("oldest"),
        )
        .select_from(joined)
        .where(claimable(now))
        .group_by(documents.c.tenant)
        .subquery()
    )
    busy = func.coalesce(running.c.running, 0)
    tenants = db.execute(
        select(waiting.c.tenant)
        .outerjoin(running, running.c.tenant == waiting.c.tenant)
        .where(busy == 0 if idle_tenants_only else true())
        .order_by(func.coalesce(running.c.running, 0), waiting.c.waiting, waiting.c.oldest)
        .limit(_CANDIDATE_TENANTS)
    ).scalars()
    for tenant in list(tenants):
        row = db.execute(
            select(jobs.c.id, jobs.c.document_id, jobs.c.attempts)
            .where(
                claimable(now),
                jobs.c.document_id.in_(select(documents.c.id).where(documents.c.tenant == tenant)),
            )
            .order_by(jobs.c.id)
            .limit(1)
            .with_for_update(skip_locked=True)
        ).one_or_none()
        if row is not None:
            return row
    return None
