"""The durable indexing queue: one `jobs` row per document still to index.

A worker claims a job by leasing it (`state=running`, `lease_expires`); a lease that is not
renewed expires and the job is claimed again, so a replica that dies mid-job loses nothing.
On PostgreSQL the claim uses `FOR UPDATE SKIP LOCKED`, so replicas never wait on each
other; on SQLite the write transaction itself serialises claims.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Engine, delete, select, update

from archivist.service.indexing.fair_queue import next_job
from archivist.service.storage.catalog import DocumentRecord, KBRecord, Status
from archivist.service.storage.database import documents, jobs, knowledge_bases, writing


class ClaimedJob(BaseModel):
    """A leased job with the document and knowledge base it indexes."""

    model_config = ConfigDict(extra="forbid")

    job_id: int
    attempt: int
    document: DocumentRecord
    kb: KBRecord


def claim(
    engine: Engine,
    owner: str,
    lease_seconds: float,
    max_attempts: int,
    *,
    idle_tenants_only: bool = False,
) -> ClaimedJob | None:
    """Lease the next claimable job (see `fair_queue`) to `owner`, or None when there is none
    (with `idle_tenants_only`, only a job of a tenant that has none running).

    A job already claimed `max_attempts` times (the process died each time) is not run
    again: its document is marked failed.
    """
    while True:
        now = time.time()
        with writing(engine) as db:
            row = next_job(db, now, idle_tenants_only)  # fair across tenants
            if row is None:
                return None
            if row.attempts >= max_attempts:
                db.execute(
                    update(documents)
                    .where(documents.c.id == row.document_id)
                    .values(
                        status=Status.FAILED.value,
                        error=f"indexing was interrupted {row.attempts} times; gave up",
                        updated_at=now,
                    )
                )
                db.execute(delete(jobs).where(jobs.c.id == row.id))
                continue
            db.execute(
                update(jobs)
                .where(jobs.c.id == row.id)
                .values(
                    state="running",
                    owner=owner,
                    lease_expires=time.time() + lease_seconds,  # from the grant, not the search
                    attempts=row.attempts + 1,
                )
            )
            db.execute(
                update(documents)
                .where(documents.c.id == row.document_id)
                .values(status=Status.INDEXING.value, error=None, updated_at=now)
            )
            document = db.execute(select(documents).where(documents.c.id == row.document_id)).one()
            kb = db.execute(
                select(knowledge_bases).where(knowledge_bases.c.id == document.kb_id)
            ).one()
        return ClaimedJob(
            job_id=row.id,
            attempt=row.attempts + 1,
            document=DocumentRecord.model_validate(document._asdict()),
            kb=KBRecord.model_validate(kb._asdict()),
        )


def renew(engine: Engine, owner: str, job_ids: list[int], lease_seconds: float) -> set[int]:
    """Extend `owner`'s leases on `job_ids`; the ids of those that are gone (their document
    was deleted, here or on another replica), whose work is no longer wanted."""
    if not job_ids:
        return set()
    with writing(engine) as db:
        db.execute(
            update(jobs)
            .where(jobs.c.id.in_(job_ids), jobs.c.owner == owner)
            .values(lease_expires=time.time() + lease_seconds)
        )
        present = db.execute(select(jobs.c.id).where(jobs.c.id.in_(job_ids))).scalars()
        return set(job_ids) - set(present)


def postpone(engine: Engine, job: ClaimedJob, delay: float, reason: str) -> bool:
    """Give `job` back for another try in `delay` s (its lease ends then, without an owner),
    its document `retrying` with `reason`; False when the document was deleted meanwhile."""
    now = time.time()
    with writing(engine) as db:
        db.execute(
            update(jobs)
            .where(jobs.c.id == job.job_id)
            .values(owner=None, lease_expires=now + delay)
        )
        result = db.execute(
            update(documents)
            .where(documents.c.id == job.document.id)
            .values(status=Status.RETRYING.value, error=reason, updated_at=now)
        )
    return bool(result.rowcount)


def finish(
    engine: Engine,
    job: ClaimedJob,
    status: Status,
    chunk_count: int = 0,
    error: str | None = None,
) -> bool:
    """Record a job's outcome and drop it; False when its document was deleted meanwhile."""
    with writing(engine) as db:
        result = db.execute(
            update(documents)
            .where(documents.c.id == job.document.id)
            .values(
                status=status.value, chunk_count=chunk_count, error=error, updated_at=time.time()
            )
        )
        db.execute(delete(jobs).where(jobs.c.id == job.job_id))
    return bool(result.rowcount)


def release_all(engine: Engine) -> int:
    """Put every running job back in the queue (start-up of the only possible owner)."""
    with writing(engine) as db:
        result = db.execute(
            update(jobs)
            .where(jobs.c.state == "running")
            .values(state="queued", owner=None, lease_expires=None)
        )
        db.execute(
            update(documents)
            .where(documents.c.status == Status.INDEXING.value)
            .values(status=Status.QUEUED.value)
        )
    return int(result.rowcount)
