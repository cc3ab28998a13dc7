"""What makes uploads safe to retry and leaves nothing behind: file-store folders in flight
(`pending_files`), content digests per knowledge base and `Idempotency-Key`s.

An upload first marks its folders pending, then writes the files, then records the documents
and clears the marks in one transaction. A process that dies between leaves marks behind,
and the sweeper removes their folders once the marks are older than its grace period.
Deleting a document marks its folder pending in the transaction that removes its record, so
a file whose removal was cut short is swept too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, delete, insert, select, update

from archivist.service.storage.database import (
    document_digests,
    idempotency_keys,
    pending_files,
    reading,
    writing,
)

IDEMPOTENCY_KEY_SECONDS = 24 * 3600.0
"""How long an `Idempotency-Key` is remembered."""


class PendingGone(RuntimeError):
    """An upload's pending marks were swept before it was recorded (it took longer than the
    sweeper's grace period): its files may be gone, so it is not recorded."""


def mark_pending(engine: Engine, folders: Iterable[str]) -> None:
    """Mark `folders` in flight, before anything is written into them."""
    with writing(engine) as db:
        mark_pending_in(db, folders)


def mark_pending_in(db: Connection, folders: Iterable[str]) -> None:
    """`mark_pending` inside the caller's transaction (a folder already marked stays so)."""
    now = time.time()
    for folder in dict.fromkeys(folders):
        db.execute(delete(pending_files).where(pending_files.c.folder == folder))
        db.execute(insert(pending_files).values(folder=folder, created_at=now))


def clear_pending(engine: Engine, folders: Iterable[str]) -> None:
    """Forget the marks of `folders` (their files were recorded or removed)."""
    wanted = list(dict.fromkeys(folders))
    if wanted:
        with writing(engine) as db:
            db.execute(delete(pending_files).where(pending_files.c.folder.in_(wanted)))


def take_pending(db: Connection, folders: Sequence[str]) -> None:
    """Clear the marks of `folders` inside the transaction that records their uploads;
    PendingGone if any was swept meanwhile (the transaction must then roll back)."""
    wanted = list(dict.fromkeys(folders))
    if not wanted:
        return
    removed = db.execute(  # a mark a sweeper claimed (time 0) is not the upload's any more
        delete(pending_files).where(
            pending_files.c.folder.in_(wanted), pending_files.c.created_at > 0
        )
    )
    if removed.rowcount != len(wanted):
        raise PendingGone(
            "the upload took longer than the service keeps unfinished uploads; send it again"
        )


def stale_pending(engine: Engine, older_than: float, limit: int) -> list[tuple[str, float]]:
    """Up to `limit` marked folders (with their mark times) marked before `older_than`,
    oldest first."""
    with reading(engine) as db:
        rows = db.execute(
            select(pending_files.c.folder, pending_files.c.created_at)
            .where(pending_files.c.created_at < older_than)
            .order_by(pending_files.c.created_at)
            .limit(limit)
        ).all()
    return [(row.folder, row.created_at) for row in rows]


SWEEPING = 0.0
"""The mark time of a folder a sweeper has claimed: its upload can no longer be recorded."""


def claim_pending(engine: Engine, folder: str, marked_at: float) -> bool:
    """Claim `folder` for removal if its mark is still the one made at `marked_at`: False
    when its upload was recorded meanwhile (the files are the document's now) or it was
    marked again. From here on the upload cannot be recorded (PendingGone)."""
    with writing(engine) as db:
        claimed = db.execute(
            update(pending_files)
            .where(pending_files.c.folder == folder, pending_files.c.created_at == marked_at)
            .values(created_at=SWEEPING)
        )
    return bool(claimed.rowcount)


def drop_pending(engine: Engine, folder: str) -> None:
    """Forget the mark of `folder` once a sweeper has claimed it and removed its files."""
    with writing(engine) as db:
        db.execute(
            delete(pending_files).where(
                pending_files.c.folder == folder, pending_files.c.created_at == SWEEPING
            )
        )


def documents_with_digests(engine: Engine, kb_id: str, digests: Iterable[str]) -> dict[str, str]:
    """Digest → id of the knowledge base's document with that content, for `digests`."""
    wanted = list(set(digests))
    if not wanted:
        return {}
    with reading(engine) as db:
        rows = db.execute(
            select(document_digests.c.digest, document_digests.c.document_id).where(
                document_digests.c.kb_id == kb_id, document_digests.c.digest.in_(wanted)
            )
        ).all()
    return {row.digest: row.document_id for row in rows}


def add_digests(db: Connection, kb_id: str, digests: dict[str, str]) -> None:
    """Record document id → content digest; IntegrityError if the knowledge base already has
    one of the contents (recorded by another request meanwhile)."""
    for document_id, digest in digests.items():
        db.execute(
            insert(document_digests).values(document_id=document_id, kb_id=kb_id, digest=digest)
        )


@dataclass(frozen=True)
class IdempotentRequest:
    """An upload request's `Idempotency-Key` and a fingerprint of what it sends."""

    tenant: str
    key: str
    fingerprint: str


def remembered(engine: Engine, request: IdempotentRequest) -> tuple[str, list[str]] | None:
    """(fingerprint, document ids) recorded for the request's key, or None when the key is
    new (or older than IDEMPOTENCY_KEY_SECONDS)."""
    with reading(engine) as db:
        row = db.execute(
            select(idempotency_keys).where(
                idempotency_keys.c.tenant == request.tenant,
                idempotency_keys.c.key == request.key,
                idempotency_keys.c.created_at > time.time() - IDEMPOTENCY_KEY_SECONDS,
            )
        ).one_or_none()
    if row is None:
        return None
    return row.fingerprint, list(json.loads(row.document_ids))


def remember(db: Connection, request: IdempotentRequest, document_ids: list[str]) -> None:
    """Record the request's key and the documents it answered with (an expired record of the
    key is replaced); IntegrityError if another request recorded the key meanwhile."""
    db.execute(
        delete(idempotency_keys).where(
            idempotency_keys.c.tenant == request.tenant,
            idempotency_keys.c.key == request.key,
            idempotency_keys.c.created_at <= time.time() - IDEMPOTENCY_KEY_SECONDS,
        )
    )
    db.execute(
        insert(idempotency_keys).values(
            tenant=request.tenant,
            key=request.key,
            fingerprint=request.fingerprint,
            document_ids=json.dumps(document_ids),
            created_at=time.time(),
        )
    )


def forget_expired_keys(engine: Engine, limit: int) -> int:
    """Remove up to `limit` expired idempotency keys; how many were removed."""
    cutoff = time.time() - IDEMPOTENCY_KEY_SECONDS
    with writing(engine) as db:
        old = db.execute(
            select(idempotency_keys.c.tenant, idempotency_keys.c.key)
            .where(idempotency_keys.c.created_at <= cutoff)
            .limit(limit)
        ).all()
        for row in old:
            db.execute(
                delete(idempotency_keys).where(
                    idempotency_keys.c.tenant == row.tenant, idempotency_keys.c.key == row.key
                )
            )
    return len(old)
