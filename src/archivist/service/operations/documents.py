"""Document operations: upload (each acceptable file of a request), look up, list, page
through chunks, read the stored file and delete with its chunks and file."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from archivist.rag import Chunk, DocumentNotFoundError
from archivist.rag.store.tenant import tenant_scope
from archivist.service.attributes import AttributeValue
from archivist.service.errors import NotFound, UploadRejected
from archivist.service.indexing.uploads import (
    IncomingFile,
    RefusedUpload,
    new_folders,
    store_uploads,
)
from archivist.service.state import ServiceState
from archivist.service.storage import catalog, quotas, upload_records
from archivist.service.storage.catalog import DocumentRecord, KBRecord, NewUpload
from archivist.service.storage.database import reading
from archivist.service.storage.file_store import DOWNLOAD_BLOCK, FileStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Accepted:
    """One file of an accepted upload: its document, and whether that document was there
    before (the same content already in the knowledge base, or a retried request)."""

    document: DocumentRecord
    existing: bool = False


RECORD_TRIES = 3
"""Tries to record an upload when other requests record the same content or key at once."""


async def upload_documents(
    state: ServiceState,
    kb: KBRecord,
    files: Sequence[IncomingFile],
    idempotency_key: str | None = None,
    attributes: Mapping[str, AttributeValue] | None = None,
    *,
    own_document: bool = False,
) -> list[Accepted | RefusedUpload]:
    """Store the files (fsynced), record the acceptable ones (with `attributes`, stamped on
    their chunks; with `own_document`, each as a document of its own even when the knowledge
    base holds its content already) and queue them for indexing;
    one answer per file, in order: its document, or why it was refused (empty, or of a type
    not read), which keeps nothing of it and counts for no quota.

    UploadRejected when every file is refused (the first one's status, every file's reason)
    or the request is over the size limit (413), QuotaExceeded when the accepted files would
    cross the tenant's quota: nothing is kept then. Content already in the knowledge base is
    answered with its document, not stored again. A request with the `idempotency_key` of an
    earlier one is answered as that one was (UploadRejected 422 when it sends something
    else). The folders are marked pending before anything is written, so a process that
    dies part-way leaves nothing the sweeper does not remove."""
    folders = new_folders(kb.id, len(files))
    await asyncio.to_thread(upload_records.mark_pending, state.engine, folders)
    try:
        return await _upload(
            state, kb, files, folders, idempotency_key, attributes, own_document
        )
    except BaseException:
        await asyncio.to_thread(_remove_quietly, state.files, state.engine, folders)
        raise


async def _upload(
    state: ServiceState,
    kb: KBRecord,
    files: Sequence[IncomingFile],
    folders: list[str],
    idempotency_key: str | None,
    attributes: Mapping[str, AttributeValue] | None,
    own_document: bool,
) -> list[Accepted | RefusedUpload]:
    received = state.files.local_path(kb.id).parent
    model = await asyncio.to_thread(state.model_for, kb)  # its own model decides the types
    stored = await asyncio.to_thread(
        store_uploads,
        list(files),
        folders,
        received,
        state.registry,
        state.settings.max_upload_bytes,
        tenant_scope(kb.tenant),
        model.supports_multimodal,
        model.model,
    )
    if own_document:  # no digest recorded: the content may be in the knowledge base twice
        stored = [
            u.model_copy(update={"digest": None}) if isinstance(u, NewUpload) else u
            for u in stored
        ]
    uploads = [u for u in stored if isinstance(u, NewUpload)]
    if not uploads:
        raise _all_refused([u for u in stored if isinstance(u, RefusedUpload)])
    request = None
    if idempotency_key is not None:
        request = upload_records.IdempotentRequest(
            kb.tenant, idempotency_key, _fingerprint(kb, stored)
        )
    saved: set[str] = set()
    for attempt in range(1, RECORD_TRIES + 1):
        if request is not None:
            answered = await _answered(state, kb, request)
            if answered is not None:
                await asyncio.to_thread(_remove_quietly, state.files, state.engine, folders)
                return _in_request_order(stored, answered)
        known = await asyncio.to_thread(
            upload_records.documents_with_digests,
            state.engine,
            kb.id,
            [u.digest for u in uploads if u.digest],
        )
        new, answer = _new_contents(uploads, known)
        fresh = [u for u in new if u.path not in saved]
        await asyncio.to_thread(_delete_all, state.files, [u.path for u in uploads if u not in new])
        quota = functools.partial(
            quotas.check_new_documents,
            tenant=kb.tenant,
            quota=state.settings.quota_for(kb.tenant),
            files=len(new),
            size=sum(upload.size for upload in new),
        )
        # Checked before the files go to the file store (no upload to S3 that is refused
        # anyway), then again, atomically, in the transaction that records them.
        await asyncio.to_thread(_check, state.engine, quota)
        await asyncio.to_thread(_save_all, state.files, [u.path for u in fresh])
        saved.update(u.path for u in fresh)
        try:
            records = await asyncio.to_thread(
                functools.partial(
                    catalog.add_documents,
                    folders=folders,  # the refused files' too: their marks go with the rest
                    request=request,
                    answer=[answer.get(u.path, u.id) for u in uploads],
                    attributes=attributes,
                ),
                state.engine,
                kb,
                new,
                quota,
            )
        except IntegrityError:  # another request recorded one of the contents, or the key
            if attempt == RECORD_TRIES:
                raise
            continue
        except upload_records.PendingGone as exc:
            raise UploadRejected(409, str(exc)) from None
        state.indexer.notify()
        return _in_request_order(stored, await _in_order(state, kb, uploads, records, answer))
    raise AssertionError("unreachable")


_REFUSAL_TYPES = {415: "unsupported_file_type", 422: "empty_file"}
"""The `type` of a refused file's entry in a problem's `errors`, by its status."""


def _all_refused(refused: list[RefusedUpload]) -> UploadRejected:
    """The error of an upload whose every file (`refused`, in request order) is refused:
    the first one's status, and each file's reason in the detail and as an entry of the
    problem's `errors` (`loc` ["files", N])."""
    return UploadRejected(
        refused[0].status,
        "; ".join(r.reason for r in refused),
        [
            {"loc": ["files", n], "msg": r.reason, "type": _REFUSAL_TYPES[r.status]}
            for n, r in enumerate(refused)
        ],
    )


def _in_request_order(
    stored: list[NewUpload | RefusedUpload], accepted: list[Accepted | None]
) -> list[Accepted | RefusedUpload]:
    """Each file's answer in request order: its refusal, or the document of its accepted
    upload (`accepted`, in the order of the accepted ones; None: that document is gone)."""
    documents = iter(accepted)
    answers: list[Accepted | RefusedUpload] = []
    for upload in stored:
        answer = upload if isinstance(upload, RefusedUpload) else next(documents, None)
        if answer is not None:
            answers.append(answer)
    return answers


def _new_contents(
    uploads: list[NewUpload], known: dict[str, str]
) -> tuple[list[NewUpload], dict[str, str]]:
    """The uploads whose content is new to the knowledge base (the first of equal ones in
    the request), and upload path → document id for the others."""
    new: list[NewUpload] = []
    answer: dict[str, str] = {}
    first: dict[str, str] = {}
    for upload in uploads:
        digest = upload.digest
        if digest is None:  # content not to be matched: always a document of its own
            new.append(upload)
        elif digest in known:
            answer[upload.path] = known[digest]
        elif digest in first:
            answer[upload.path] = first[digest]
        else:
            first[digest] = upload.id
            new.append(upload)
    return new, answer


async def _in_order(
    state: ServiceState,
    kb: KBRecord,
    uploads: list[NewUpload],
    records: list[DocumentRecord],
    answer: dict[str, str],
) -> list[Accepted | None]:
    """Each upload's document in request order (None: it is gone); the ones answered by a
    document already there are marked existing (one new in this request is not)."""
    made = {record.id: record for record in records}
    others = await asyncio.to_thread(
        catalog.documents_by_id, state.engine, kb.id, [i for i in answer.values() if i not in made]
    )
    found = {**{d.id: d for d in others}, **made}
    accepted: list[Accepted | None] = []
    for upload in uploads:
        document_id = answer.get(upload.path, upload.id)
        document = found.get(document_id)
        accepted.append(None if document is None else Accepted(document, document_id not in made))
    return accepted


async def _answered(
    state: ServiceState, kb: KBRecord, request: upload_records.IdempotentRequest
) -> list[Accepted | None] | None:
    """The documents of the request recorded under its key, in the order of its accepted
    files (None: one gone since), or None when the key is new; UploadRejected 422 when the
    key was used for a different request."""
    found = await asyncio.to_thread(upload_records.remembered, state.engine, request)
    if found is None:
        return None
    fingerprint, document_ids = found
    if fingerprint != request.fingerprint:
        raise UploadRejected(
            422,
            "Idempotency-Key: this key was used for a different upload; "
            "use a new key for a new request",
        )
    documents = await asyncio.to_thread(catalog.documents_by_id, state.engine, kb.id, document_ids)
    by_id = {d.id: d for d in documents}
    return [Accepted(by_id[i], existing=True) if i in by_id else None for i in document_ids]


def _fingerprint(kb: KBRecord, stored: list[NewUpload | RefusedUpload]) -> str:
    """What identifies an upload request: its knowledge base and its files' names and
    contents (the refused ones' too), in order."""
    parts = [kb.id, *(f"{u.filename}\0{u.digest}" for u in stored)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _check(engine: Engine, check: catalog.Check) -> None:
    """Run `check` on the database as it is now."""
    with reading(engine) as db:
        check(db)


def _save_all(files: FileStore, keys: list[str]) -> None:
    """Put every received upload into the file store (on failure the caller removes them)."""
    for key in keys:
        files.save(key)


def _delete_all(files: FileStore, keys: list[str]) -> None:
    """Remove every received upload, wherever it is (received or in the file store)."""
    for key in keys:
        files.delete_folder(str(PurePosixPath(key).parent))


def _remove_quietly(files: FileStore, engine: Engine, folders: list[str]) -> None:
    """Remove the folders of an upload that was not recorded, and their pending marks; what
    fails here (the file store or the database out of reach) is left to the sweeper."""
    removed = []
    for folder in folders:
        try:
            files.delete_folder(folder)
        except Exception:  # the mark stays, so the sweeper removes it
            logger.debug("removing %s failed; the sweeper will", folder, exc_info=True)
            continue
        removed.append(folder)
    try:
        upload_records.clear_pending(engine, removed)
    except Exception:  # stale marks are swept (their folders are gone)
        logger.debug("clearing pending marks failed; the sweeper will", exc_info=True)


async def get_document(state: ServiceState, kb: KBRecord, document_id: str) -> DocumentRecord:
    """Document `document_id` of `kb`; NotFound when `kb` has none of that id."""
    document = await asyncio.to_thread(catalog.get_document, state.engine, kb.id, document_id)
    if document is None:
        raise NotFound(f"no document {document_id!r}")
    return document


async def list_documents(state: ServiceState, kb: KBRecord) -> list[DocumentRecord]:
    """Every document of `kb` with its indexing status, oldest first."""
    return await asyncio.to_thread(catalog.list_documents, state.engine, kb.id)


async def list_chunks(
    state: ServiceState, kb: KBRecord, document: DocumentRecord, offset: int, limit: int
) -> list[Chunk]:
    """A page of the document's stored chunks in `chunk_index` order."""
    handle = await state.handle(kb)
    return await handle.list_chunks(document.id, offset, limit)


@dataclass
class StoredFile:
    """An upload opened for reading: its size and its bytes block by block."""

    reader: BinaryIO
    size: int

    async def blocks(self) -> AsyncIterator[bytes]:
        """The file's bytes, read off the event loop; the file is closed when they end."""
        try:
            while block := await asyncio.to_thread(self.reader.read, DOWNLOAD_BLOCK):
                yield block
        finally:
            await asyncio.to_thread(self.reader.close)


async def open_file(state: ServiceState, document: DocumentRecord) -> StoredFile:
    """The document's raw upload; NotFound when the file store no longer has it."""
    opened = await asyncio.to_thread(state.files.open, document.path)
    if opened is None:
        raise NotFound(f"the file of {document.id!r} is gone")
    return StoredFile(*opened)


async def delete_document(state: ServiceState, kb: KBRecord, document: DocumentRecord) -> None:
    """Delete the document: its chunks, its record and its file. Indexing it in this process
    is stopped first (its parsing child killed), and the delete waits until that has
    unwound, so nothing of it is written back."""
    handle = await state.handle(kb)
    state.indexer.cancel(document.id)
    async with state.locks.hold(document.id):
        with contextlib.suppress(DocumentNotFoundError):
            await handle.delete_document(document.id)
        await asyncio.to_thread(catalog.delete_document, state.engine, document.id)
    folder = str(PurePosixPath(document.path).parent)
    await asyncio.to_thread(state.files.delete_folder, folder)
    await asyncio.to_thread(upload_records.clear_pending, state.engine, [folder])
