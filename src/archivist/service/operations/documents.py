"""Document operations: upload (all or nothing), look up, list, page through chunks, read
the stored file and delete with its chunks and file."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO

from sqlalchemy import Engine

from archivist.rag import Chunk, DocumentNotFoundError
from archivist.service.guards import quotas
from archivist.service.indexing.uploads import IncomingFile, store_uploads
from archivist.service.operations.errors import NotFound
from archivist.service.retrieval.vectors import tenant_scope
from archivist.service.state import ServiceState
from archivist.service.storage import catalog
from archivist.service.storage.catalog import DocumentRecord, KBRecord
from archivist.service.storage.database import reading
from archivist.service.storage.file_store import DOWNLOAD_BLOCK, FileStore


async def upload_documents(
    state: ServiceState, kb: KBRecord, files: Sequence[IncomingFile]
) -> list[DocumentRecord]:
    """Store the files (fsynced), record them and queue them for indexing; all are accepted
    or none is kept (UploadRejected for a bad file, QuotaExceeded over the tenant's quota)."""
    received = state.files.local_path(kb.id).parent
    model = await asyncio.to_thread(state.model_for, kb)  # its own model decides the types
    uploads = await asyncio.to_thread(
        store_uploads,
        list(files),
        received / kb.id,
        received,
        state.registry,
        state.settings.max_upload_bytes,
        tenant_scope(kb),
        model.supports_multimodal,
        model.model,
    )
    quota = functools.partial(
        quotas.check_new_documents,
        tenant=kb.tenant,
        quota=state.settings.quota_for(kb.tenant),
        files=len(uploads),
        size=sum(upload.size for upload in uploads),
    )
    keys = [upload.path for upload in uploads]
    try:
        # Checked before the files go to the file store (no upload to S3 that is refused
        # anyway), then again, atomically, in the transaction that records them.
        await asyncio.to_thread(_check, state.engine, quota)
        await asyncio.to_thread(_save_all, state.files, keys)
        records = await asyncio.to_thread(catalog.add_documents, state.engine, kb, uploads, quota)
    except BaseException:
        await asyncio.to_thread(_delete_all, state.files, keys)
        raise
    state.indexer.notify()
    return records


def _check(engine: Engine, check: catalog.Check) -> None:
    """Run `check` on the database as it is now."""
    with reading(engine) as db:
        check(db)


def _save_all(files: FileStore, keys: list[str]) -> None:
    """Put every received upload into the file store; on failure none stays anywhere."""
    try:
        for key in keys:
            files.save(key)
    except BaseException:
        _delete_all(files, keys)
        raise


def _delete_all(files: FileStore, keys: list[str]) -> None:
    """Remove every received upload, wherever it is (received or in the file store)."""
    for key in keys:
        files.delete_folder(str(PurePosixPath(key).parent))


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
