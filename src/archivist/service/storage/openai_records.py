"""What the OpenAI-compatible API records beside the catalog: files, the vector-store view of
knowledge bases, the files added to them and file batches.

A vector store is a knowledge base; a file added to one becomes a document of it, and the
file's status there is that document's status.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Engine, delete, insert, select, update

from archivist.service.storage.catalog import KBRecord, Status
from archivist.service.storage.database import (
    documents,
    file_batches,
    knowledge_bases,
    openai_files,
    reading,
    vector_store_files,
    vector_stores,
    writing,
)


class FileRecord(BaseModel):
    """An uploaded file: where its bytes are in the file store."""

    model_config = ConfigDict(extra="forbid")

    id: str
    tenant: str
    filename: str
    purpose: str
    bytes: int
    path: str
    created_at: float


class StoreView(BaseModel):
    """A knowledge base as a vector store: the name and metadata it was given (a knowledge
    base made through the native API has none: its own name stands)."""

    model_config = ConfigDict(extra="forbid")

    kb: KBRecord
    name: str
    metadata: dict[str, str]
    expires_days: int | None
    last_active_at: float


class StoreFile(BaseModel):
    """A file of a vector store, with the status of the document it became."""

    model_config = ConfigDict(extra="forbid")

    kb_id: str
    file_id: str
    document_id: str | None
    batch_id: str | None
    attributes: dict[str, Any]
    status: str
    """"in_progress", "completed", "failed" or "cancelled"."""
    error_code: str | None
    error: str | None
    size: int
    created_at: float


class BatchRecord(BaseModel):
    """A file batch of a vector store."""

    model_config = ConfigDict(extra="forbid")

    id: str
    kb_id: str
    created_at: float
    cancelled_at: float | None


def new_id(prefix: str) -> str:
    """A fresh id with OpenAI's prefix for its kind (`file-`, `vsfb_`): the time in
    milliseconds, then random digits, so ids sort as they were made and a list can go on
    after an id that was deleted meanwhile."""
    return f"{prefix}{time.time_ns() // 1_000_000:012x}{uuid.uuid4().hex[:20]}"


# Files


def add_file(engine: Engine, record: FileRecord) -> None:
    """Record an uploaded file (its bytes already in the file store)."""
    with writing(engine) as db:
        db.execute(insert(openai_files).values(**record.model_dump()))


def tenant_files(engine: Engine, tenant: str, purpose: str | None = None) -> list[FileRecord]:
    """The tenant's files, oldest first (their ids sort so)."""
    query = select(openai_files).where(openai_files.c.tenant == tenant)
    if purpose is not None:
        query = query.where(openai_files.c.purpose == purpose)
    with reading(engine) as db:
        rows = db.execute(query.order_by(openai_files.c.id)).all()
    return [FileRecord.model_validate(row._asdict()) for row in rows]


def get_file(engine: Engine, tenant: str, file_id: str) -> FileRecord | None:
    """The tenant's file `file_id`, or None (also another tenant's)."""
    with reading(engine) as db:
        row = db.execute(
            select(openai_files).where(
                openai_files.c.id == file_id, openai_files.c.tenant == tenant
            )
        ).one_or_none()
    return None if row is None else FileRecord.model_validate(row._asdict())


def forget_file(engine: Engine, file_id: str) -> None:
    """Remove a file's record (the caller removes its bytes)."""
    with writing(engine) as db:
        db.execute(delete(openai_files).where(openai_files.c.id == file_id))


# Vector stores


def set_view(
    engine: Engine,
    kb_id: str,
    *,
    name: str,
    metadata: dict[str, str],
    expires_days: int | None,
) -> None:
    """Record (or replace) the vector-store view of knowledge base `kb_id`."""
    with writing(engine) as db:
        db.execute(delete(vector_stores).where(vector_stores.c.kb_id == kb_id))
        db.execute(
            insert(vector_stores).values(
                kb_id=kb_id,
                name=name,
                metadata=json.dumps(metadata),
                expires_days=expires_days,
                last_active_at=time.time(),
            )
        )


def views(engine: Engine, kbs: list[KBRecord]) -> list[StoreView]:
    """Each knowledge base of `kbs` as a vector store, in the same order."""
    ids = [kb.id for kb in kbs]
    with reading(engine) as db:
        rows = {
            row.kb_id: row
            for row in db.execute(select(vector_stores).where(vector_stores.c.kb_id.in_(ids)))
        }
    shown = []
    for kb in kbs:
        row = rows.get(kb.id)
        shown.append(
            StoreView(
                kb=kb,
                name=kb.name if row is None else row.name,
                metadata={} if row is None else json.loads(row.metadata),
                expires_days=None if row is None else row.expires_days,
                last_active_at=kb.created_at if row is None else row.last_active_at,
            )
        )
    return shown


def touch(engine: Engine, kb_id: str) -> None:
    """Mark the vector store active now (its expiry counts from here)."""
    with writing(engine) as db:
        db.execute(
            update(vector_stores)
            .where(vector_stores.c.kb_id == kb_id)
            .values(last_active_at=time.time())
        )


def kb_by_id(engine: Engine, tenant: str, kb_id: str) -> KBRecord | None:
    """The tenant's knowledge base `kb_id` (counted), or None (also another tenant's)."""
    with reading(engine) as db:
        row = db.execute(
            select(knowledge_bases).where(
                knowledge_bases.c.id == kb_id, knowledge_bases.c.tenant == tenant
            )
        ).one_or_none()
    return None if row is None else KBRecord.model_validate(row._asdict())


# Files of vector stores

_STATUS = {
    Status.QUEUED.value: "in_progress",
    Status.INDEXING.value: "in_progress",
    Status.RETRYING.value: "in_progress",
    Status.READY.value: "completed",
    Status.FAILED.value: "failed",
}


def add_store_file(
    engine: Engine,
    kb_id: str,
    file_id: str,
    *,
    document_id: str | None,
    attributes: dict[str, Any],
    batch_id: str | None = None,
    error_code: str | None = None,
    error: str | None = None,
) -> None:
    """Record file `file_id` in vector store `kb_id` (replacing an earlier record of it):
    as `document_id`, or failed with `error` when it became no document."""
    with writing(engine) as db:
        db.execute(
            delete(vector_store_files).where(
                vector_store_files.c.kb_id == kb_id, vector_store_files.c.file_id == file_id
            )
        )
        db.execute(
            insert(vector_store_files).values(
                kb_id=kb_id,
                file_id=file_id,
                document_id=document_id,
                batch_id=batch_id,
                attributes=json.dumps(attributes),
                status=None if document_id is not None else "failed",
                error_code=error_code,
                error=error,
                created_at=time.time(),
            )
        )


def store_files(
    engine: Engine, kb_id: str, *, batch_id: str | None = None, file_id: str | None = None
) -> list[StoreFile]:
    """The files of vector store `kb_id` (of one batch, or one file), oldest first."""
    query = (
        select(
            vector_store_files,
            documents.c.status.label("document_status"),
            documents.c.error.label("document_error"),
            documents.c.size.label("size"),
        )
        .outerjoin(documents, documents.c.id == vector_store_files.c.document_id)
        .where(vector_store_files.c.kb_id == kb_id)
    )
    if batch_id is not None:
        query = query.where(vector_store_files.c.batch_id == batch_id)
    if file_id is not None:
        query = query.where(vector_store_files.c.file_id == file_id)
    order = (vector_store_files.c.created_at, vector_store_files.c.file_id)
    with reading(engine) as db:
        rows = db.execute(query.order_by(*order)).all()
    found = []
    for row in rows:
        if row.document_id is not None and row.document_status is None:
            continue  # its document was deleted (through the native API)
        status = row.status or _STATUS.get(row.document_status, "in_progress")
        failed = status == "failed"
        found.append(
            StoreFile(
                kb_id=row.kb_id,
                file_id=row.file_id,
                document_id=row.document_id,
                batch_id=row.batch_id,
                attributes=json.loads(row.attributes),
                status=status,
                error_code=(row.error_code or "server_error") if failed else None,
                error=(row.error or row.document_error or "indexing failed") if failed else None,
                size=row.size or 0,
                created_at=row.created_at,
            )
        )
    return found


def set_store_file(engine: Engine, kb_id: str, file_id: str, **values: Any) -> None:
    """Change columns of one file of a vector store (`attributes` given as a dict)."""
    if "attributes" in values:
        values["attributes"] = json.dumps(values["attributes"])
    with writing(engine) as db:
        db.execute(
            update(vector_store_files)
            .where(vector_store_files.c.kb_id == kb_id, vector_store_files.c.file_id == file_id)
            .values(**values)
        )


def remove_store_file(engine: Engine, kb_id: str, file_id: str) -> str | None:
    """Forget file `file_id` of vector store `kb_id`; the id of its document when no other
    file of the store became the same document (the caller deletes it), else None."""
    with writing(engine) as db:
        document_id = db.execute(
            select(vector_store_files.c.document_id).where(
                vector_store_files.c.kb_id == kb_id, vector_store_files.c.file_id == file_id
            )
        ).scalar_one_or_none()
        db.execute(
            delete(vector_store_files).where(
                vector_store_files.c.kb_id == kb_id, vector_store_files.c.file_id == file_id
            )
        )
        if document_id is None:
            return None
        shared = db.execute(
            select(vector_store_files.c.file_id).where(
                vector_store_files.c.document_id == document_id
            )
        ).first()
    return None if shared is not None else str(document_id)


def files_of_documents(engine: Engine, kb_id: str, document_ids: list[str]) -> dict[str, str]:
    """Document id → the file of vector store `kb_id` it came from (its earliest)."""
    with reading(engine) as db:
        rows = db.execute(
            select(vector_store_files.c.document_id, vector_store_files.c.file_id)
            .where(
                vector_store_files.c.kb_id == kb_id,
                vector_store_files.c.document_id.in_(document_ids),
            )
            .order_by(vector_store_files.c.created_at.desc())
        ).all()
    return {row.document_id: row.file_id for row in rows}


# File batches


def add_batch(engine: Engine, kb_id: str) -> BatchRecord:
    """A new file batch of vector store `kb_id`."""
    record = BatchRecord(id=new_id("vsfb_"), kb_id=kb_id, created_at=time.time(), cancelled_at=None)
    with writing(engine) as db:
        db.execute(insert(file_batches).values(**record.model_dump()))
    return record


def get_batch(engine: Engine, kb_id: str, batch_id: str) -> BatchRecord | None:
    """Batch `batch_id` of vector store `kb_id`, or None."""
    with reading(engine) as db:
        row = db.execute(
            select(file_batches).where(file_batches.c.id == batch_id, file_batches.c.kb_id == kb_id)
        ).one_or_none()
    return None if row is None else BatchRecord.model_validate(row._asdict())


def cancel_batch(engine: Engine, batch_id: str) -> None:
    """Mark a batch cancelled now."""
    with writing(engine) as db:
        db.execute(
            update(file_batches)
            .where(file_batches.c.id == batch_id)
            .values(cancelled_at=time.time())
        )
