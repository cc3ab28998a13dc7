"""Knowledge-base and document records, always looked up within one tenant."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, Engine, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from archivist.rag.knowledge.profile import KnowledgeProfile
from archivist.service.errors import KBExistsError
from archivist.service.storage.database import (
    document_attributes,
    documents,
    jobs,
    kb_settings,
    knowledge_bases,
    lock_tenant,
    reading,
    writing,
)
from archivist.service.storage.recent import RecentlyFound
from archivist.service.storage.upload_records import (
    IdempotentRequest,
    add_digests,
    mark_pending_in,
    remember,
    take_pending,
)

KB_CACHE_SECONDS = 2.0
"""How long a knowledge base found by `get_kb` is answered by `recent_kb` from memory."""
KB_CACHE_SIZE = 4096

Check = Callable[[Connection], None]
"""A check run inside a write transaction before it writes; it refuses by raising."""


def _check_for(db: Connection, tenant: str, check: Check | None) -> None:
    """Run `check` under `tenant`'s write lock, so it sees every write before this one."""
    if check is not None:
        lock_tenant(db, tenant)
        check(db)


class Status(StrEnum):
    """Where a document is on its way into the knowledge base."""

    QUEUED = "queued"
    INDEXING = "indexing"
    RETRYING = "retrying"
    """A dependency (the database, the file store) failed; `error` says which, and the job
    runs again after a pause."""
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
    embedding_model: str | None = None
    """Chosen at creation (with `chunk_size`, `overlap`); None: the service's defaults."""
    chunk_size: int | None = None
    overlap: int | None = None

    def profile(self, defaults: KnowledgeProfile) -> KnowledgeProfile:
        """This knowledge base as a profile confined to its tenant: its recorded indexing,
        `defaults`' (the service's, as they are now) where it chose none."""
        chose = self.embedding_model is not None
        return KnowledgeProfile(
            name=self.name,
            description=self.description,
            collection=self.collection,
            tenant=self.tenant,
            embedding_model=self.embedding_model if chose else defaults.embedding_model,
            chunk_size=self.chunk_size if chose else defaults.chunk_size,
            overlap=self.overlap if chose and self.overlap is not None else defaults.overlap,
        )


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
    digest: str | None = None
    """SHA-256 of the content (hex): one document per content in a knowledge base."""

    @property
    def folder(self) -> str:
        """The file-store folder the upload alone occupies."""
        return self.path.rsplit("/", 1)[0]


def _kb(row: Any) -> KBRecord:
    return KBRecord.model_validate(row._asdict())


def _document(row: Any) -> DocumentRecord:
    return DocumentRecord.model_validate(row._asdict())


_SETTINGS = ("embedding_model", "chunk_size", "overlap")


def create_kb(
    engine: Engine,
    tenant: str,
    name: str,
    description: str,
    *,
    embedding_model: str | None = None,
    chunk_size: int | None = None,
    overlap: int | None = None,
    check: Check | None = None,
) -> KBRecord:
    """Record a new knowledge base with a fresh collection name (no tenant text in it) and,
    when `embedding_model` is given, how it indexes; `check` (a quota) runs first in the same
    transaction under the tenant's lock and may refuse it."""
    kb_id = uuid.uuid4().hex
    record = KBRecord(
        id=kb_id,
        tenant=tenant,
        name=name,
        description=description,
        collection=f"kb_{kb_id}",
        created_at=time.time(),
        embedding_model=embedding_model,
        chunk_size=chunk_size if embedding_model else None,
        overlap=overlap if embedding_model else None,
    )
    try:
        with writing(engine) as db:
            _check_for(db, tenant, check)
            db.execute(
                insert(knowledge_bases).values(
                    **record.model_dump(exclude={"document_count", *_SETTINGS})
                )
            )
            if embedding_model is not None:
                db.execute(
                    insert(kb_settings).values(
                        kb_id=kb_id,
                        embedding_model=embedding_model,
                        chunk_size=chunk_size,
                        overlap=overlap or 0,
                    )
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
            *_settings_columns(),
        )
        .outerjoin(counts, counts.c.kb_id == knowledge_bases.c.id)
        .outerjoin(kb_settings, kb_settings.c.kb_id == knowledge_bases.c.id)
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
            select(knowledge_bases, *_settings_columns())
            .outerjoin(kb_settings, kb_settings.c.kb_id == knowledge_bases.c.id)
            .where(knowledge_bases.c.tenant == tenant, knowledge_bases.c.name == name)
        ).one_or_none()
    if row is None:
        return None
    kb = _kb(row)
    _found_kbs.put(engine, (tenant, name), kb)
    return kb


def counted(engine: Engine, kb: KBRecord) -> KBRecord:
    """`kb` with its current document count (`get_kb` leaves it out: most requests that look
    a knowledge base up never show it, and counting grows with the knowledge base)."""
    with reading(engine) as db:
        count = db.execute(
            select(func.count()).select_from(documents).where(documents.c.kb_id == kb.id)
        ).scalar_one()
    return kb.model_copy(update={"document_count": count})


def recent_kb(engine: Engine, tenant: str, name: str) -> KBRecord | None:
    """The tenant's knowledge base `name` if `get_kb` found it within `KB_CACHE_SECONDS`,
    else None (then ask `get_kb`); never touches the database, so it is safe on the event
    loop. For searches: its id, collection and indexing choices never change, but its
    `document_count` may be that old, and a rename or deletion by another process (or one
    racing a lookup already under way) shows only after `KB_CACHE_SECONDS`. A search of a
    knowledge base deleted meanwhile finds nothing: searches never create collections."""
    return _found_kbs.get(engine, (tenant, name))


# (tenant, name) -> the knowledge base, for those `get_kb` found recently.
_found_kbs: RecentlyFound[tuple[str, str], KBRecord] = RecentlyFound(
    KB_CACHE_SECONDS, KB_CACHE_SIZE
)


def _forget_kb(engine: Engine, kb_id: str) -> None:
    _found_kbs.forget(engine, lambda _key, kb: kb.id == kb_id)


def _settings_columns() -> list[Any]:
    return [kb_settings.c[column] for column in _SETTINGS]


def with_settings(engine: Engine, kb: KBRecord) -> KBRecord:
    """`kb` with its recorded indexing choices filled in (a record read without them)."""
    with reading(engine) as db:
        row = db.execute(select(kb_settings).where(kb_settings.c.kb_id == kb.id)).one_or_none()
    if row is None:
        return kb
    return kb.model_copy(update={c: getattr(row, c) for c in _SETTINGS})


def update_kb(engine: Engine, kb: KBRecord, name: str | None, description: str | None) -> KBRecord:
    """Rename and/or re-describe `kb`; KBExistsError when the tenant has the new name."""
    values = {
        key: value
        for key, value in (("name", name), ("description", description))
        if value is not None
    }
    if values:
        try:
            with writing(engine) as db:
                db.execute(
                    update(knowledge_bases).where(knowledge_bases.c.id == kb.id).values(**values)
                )
        except IntegrityError:
            raise KBExistsError(f"knowledge base {name!r} already exists") from None
        _forget_kb(engine, kb.id)
    return kb.model_copy(update=values)


def documents_by_id(engine: Engine, kb_id: str, ids: list[str]) -> list[DocumentRecord]:
    """The knowledge base's documents among `ids` (others are left out), in `ids` order."""
    with reading(engine) as db:
        rows = db.execute(
            select(documents).where(documents.c.kb_id == kb_id, documents.c.id.in_(ids))
        ).all()
    found = {row.id: _document(row) for row in rows}
    return [found[i] for i in dict.fromkeys(ids) if i in found]


def delete_kb(engine: Engine, kb_id: str) -> list[DocumentRecord]:
    """Remove a knowledge base's records (documents and jobs too); returns its documents."""
    with writing(engine) as db:
        rows = db.execute(select(documents).where(documents.c.kb_id == kb_id)).all()
        mark_pending_in(db, [kb_id])  # its files are removed next; swept if that is cut short
        ids = [row.id for row in rows]
        if ids:
            db.execute(delete(jobs).where(jobs.c.document_id.in_(ids)))
            db.execute(delete(documents).where(documents.c.kb_id == kb_id))
        db.execute(delete(knowledge_bases).where(knowledge_bases.c.id == kb_id))
    _forget_kb(engine, kb_id)
    return [_document(row) for row in rows]


def add_documents(
    engine: Engine,
    kb: KBRecord,
    uploads: list[NewUpload],
    check: Check | None = None,
    *,
    folders: list[str] | None = None,
    request: IdempotentRequest | None = None,
    answer: list[str] | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> list[DocumentRecord]:
    """Record uploads and queue one indexing job each, in one transaction; `check` (a quota)
    runs first in that transaction under the tenant's lock and may refuse them all.

    The same transaction records each upload's digest, clears the pending marks of
    `folders` (PendingGone if one was swept) and remembers `request`'s key with the document
    ids of `answer` (default: the new documents') and `attributes` for each new document;
    IntegrityError when another request recorded one of the contents, or the key, meanwhile."""
    now = time.time()
    records = [
        DocumentRecord(
            **upload.model_dump(exclude={"digest"}),
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
        _check_for(db, kb.tenant, check)
        for record in records:
            db.execute(insert(documents).values(**record.model_dump()))
            db.execute(
                insert(jobs).values(
                    document_id=record.id, state="queued", attempts=0, created_at=now
                )
            )
            if attributes:
                db.execute(
                    insert(document_attributes).values(
                        document_id=record.id, attributes=json.dumps(dict(attributes))
                    )
                )
        add_digests(db, kb.id, {u.id: u.digest for u in uploads if u.digest is not None})
        take_pending(db, folders or [])
        if request is not None:
            remember(db, request, answer if answer is not None else [r.id for r in records])
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
    """Remove a document's record and its job, and mark its file's folder pending: the
    caller removes the folder next, and the sweeper does if that is cut short."""
    with writing(engine) as db:
        path = db.execute(
            select(documents.c.path).where(documents.c.id == document_id)
        ).scalar_one_or_none()
        if path is not None:
            mark_pending_in(db, [path.rsplit("/", 1)[0]])
        db.execute(delete(jobs).where(jobs.c.document_id == document_id))
        db.execute(delete(documents).where(documents.c.id == document_id))


def document_attributes_of(engine: Engine, document_id: str) -> dict[str, Any]:
    """The attributes recorded for a document (none: empty)."""
    with reading(engine) as db:
        found = db.execute(
            select(document_attributes.c.attributes).where(
                document_attributes.c.document_id == document_id
            )
        ).scalar_one_or_none()
    return {} if found is None else dict(json.loads(found))


def set_attributes(engine: Engine, document_id: str, attributes: Mapping[str, Any]) -> bool:
    """Record a document's attributes and queue it to be indexed again (its chunks carry
    them), unless it is queued already; False when the document is gone."""
    now = time.time()
    with writing(engine) as db:
        exists = db.execute(
            select(documents.c.id).where(documents.c.id == document_id)
        ).scalar_one_or_none()
        if exists is None:
            return False
        held = document_attributes.c.document_id == document_id
        db.execute(delete(document_attributes).where(held))
        if attributes:
            db.execute(
                insert(document_attributes).values(
                    document_id=document_id, attributes=json.dumps(dict(attributes))
                )
            )
        queued = db.execute(
            select(jobs.c.state).where(jobs.c.document_id == document_id)
        ).scalar_one_or_none()
        if queued is None:
            db.execute(
                insert(jobs).values(
                    document_id=document_id, state="queued", attempts=0, created_at=now
                )
            )
            db.execute(
                update(documents)
                .where(documents.c.id == document_id)
                .values(status=Status.QUEUED.value, error=None, updated_at=now)
            )
    return True
