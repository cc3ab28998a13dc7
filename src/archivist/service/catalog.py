"""Knowledge-base and document records, always looked up within one tenant."""

from __future__ import annotations

import time
import uuid
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Engine, delete, func, insert, select
from sqlalchemy.exc import IntegrityError

from archivist.service.database import documents, jobs, knowledge_bases, reading, writing


class Status(StrEnum):
    """Where a document is on its way into the knowledge base."""

    QUEUED = "queued"
    INDEXING = "indexing"
    READY = "ready"
    FAILED = "failed"


class KBRecord(BaseModel):
    """A tenant's knowledge base; `collection` is its own Qdrant collection."""

    model_config = ConfigDict(extra="forbid")

    id: str
    tenant: str
    name: str
    description: str
    collection: str
    created_at: float
    document_count: int = 0


class DocumentRecord(BaseModel):
    """One upload: its stored file (relative `path` under the files folder) and status."""

    model_config = ConfigDict(extra="forbid")

    id: str
    kb_id: str
    tenant: str
    filename: str
    media_type: str
    path: str
    size: int
    status: Status
    chunk_count: int
    error: str | None
    created_at: float
    updated_at: float


class NewUpload(BaseModel):
    """A file already written (and fsynced) under the files folder, to be recorded."""

    model_config = ConfigDict(extra="forbid")

    id: str
    filename: str
    media_type: str
    path: str
    size: int


class KBExistsError(ValueError):
    """The tenant already has a knowledge base of that name."""


def _kb(row: Any) -> KBRecord:
    return KBRecord.model_validate(row._asdict())


def _document(row: Any) -> DocumentRecord:
    return DocumentRecord.model_validate(row._asdict())


def create_kb(engine: Engine, tenant: str, name: str, description: str) -> KBRecord:
    """Record a new knowledge base with a fresh collection name (no tenant text in it)."""
    kb_id = uuid.uuid4().hex
    record = KBRecord(
        id=kb_id,
        tenant=tenant,
        name=name,
        description=description,
        collection=f"kb_{kb_id}",
        created_at=time.time(),
    )
    try:
        with writing(engine) as db:
            db.execute(
                insert(knowledge_bases).values(**record.model_dump(exclude={"document_count"}))
            )
    except IntegrityError:
        raise KBExistsError(f"knowledge base {name!r} already exists") from None
    return record


def list_kbs(engine: Engine, tenant: str) -> list[KBRecord]:
    """The tenant's knowledge bases by name, with their document counts."""
    counts = (
        select(documents.c.kb_id, func.count().label("document_count"))
        .group_by(documents.c.kb_id)
        .subquery()
    )
    query = (
        select(
            *knowledge_bases.c,
            func.coalesce(counts.c.document_count, 0).label("document_count"),
        )
        .outerjoin(counts, counts.c.kb_id == knowledge_bases.c.id)
        .where(knowledge_bases.c.tenant == tenant)
        .order_by(knowledge_bases.c.name)
    )
    with reading(engine) as db:
        return [_kb(row) for row in db.execute(query)]


def tenant_kbs(engine: Engine, tenant: str) -> list[KBRecord]:
    """The tenant's knowledge bases by name, without document counts (reads only its rows)."""
    query = (
        select(knowledge_bases)
        .where(knowledge_bases.c.tenant == tenant)
        .order_by(knowledge_bases.c.name)
    )
    with reading(engine) as db:
        return [_kb(row) for row in db.execute(query)]


def get_kb(engine: Engine, tenant: str, name: str) -> KBRecord | None:
    """The tenant's knowledge base `name`, or None (also when another tenant has one)."""
    with reading(engine) as db:
        row = db.execute(
            select(knowledge_bases).where(
                knowledge_bases.c.tenant == tenant, knowledge_bases.c.name == name
            )
        ).one_or_none()
    return None if row is None else _kb(row)


def delete_kb(engine: Engine, kb_id: str) -> list[DocumentRecord]:
    """Remove a knowledge base's records (documents and jobs too); returns its documents."""
    with writing(engine) as db:
        rows = db.execute(select(documents).where(documents.c.kb_id == kb_id)).all()
        ids = [row.id for row in rows]
        if ids:
            db.execute(delete(jobs).where(jobs.c.document_id.in_(ids)))
            db.execute(delete(documents).where(documents.c.kb_id == kb_id))
        db.execute(delete(knowledge_bases).where(knowledge_bases.c.id == kb_id))
    return [_document(row) for row in rows]


def add_documents(engine: Engine, kb: KBRecord, uploads: list[NewUpload]) -> list[DocumentRecord]:
    """Record uploads and queue one indexing job each, in one transaction."""
    now = time.time()
    records = [
        DocumentRecord(
            **upload.model_dump(),
            kb_id=kb.id,
            tenant=kb.tenant,
            status=Status.QUEUED,
            chunk_count=0,
            error=None,
            created_at=now,
            updated_at=now,
        )
        for upload in uploads
    ]
    with writing(engine) as db:
        for record in records:
            db.execute(insert(documents).values(**record.model_dump()))
            db.execute(
                insert(jobs).values(
                    document_id=record.id, state="queued", attempts=0, created_at=now
                )
            )
    return records


def list_documents(engine: Engine, kb_id: str) -> list[DocumentRecord]:
    """A knowledge base's documents, oldest first."""
    with reading(engine) as db:
        rows = db.execute(
            select(documents)
            .where(documents.c.kb_id == kb_id)
            .order_by(documents.c.created_at, documents.c.filename)
        ).all()
    return [_document(row) for row in rows]


def get_document(engine: Engine, kb_id: str, document_id: str) -> DocumentRecord | None:
    """Document `document_id` of knowledge base `kb_id`, or None."""
    with reading(engine) as db:
        row = db.execute(
            select(documents).where(documents.c.kb_id == kb_id, documents.c.id == document_id)
        ).one_or_none()
    return None if row is None else _document(row)


def delete_document(engine: Engine, document_id: str) -> None:
    """Remove a document's record and its job."""
    with writing(engine) as db:
        db.execute(delete(jobs).where(jobs.c.document_id == document_id))
        db.execute(delete(documents).where(documents.c.id == document_id))
