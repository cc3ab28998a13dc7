"""`/v1/knowledge-bases/{name}/documents`: upload, status, chunks, raw file, delete."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from pathlib import PurePosixPath
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, File, HTTPException, Query, Response, UploadFile, status
from fastapi.responses import StreamingResponse
from pydantic import AfterValidator
from sqlalchemy import Engine

from archivist.message import TextBlock
from archivist.rag import DocumentNotFoundError
from archivist.service.dependencies import KB, Document, State
from archivist.service.guards import quotas
from archivist.service.guards.security_headers import DOWNLOAD_CSP
from archivist.service.indexing.uploads import IncomingFile, UploadRejected, store_uploads
from archivist.service.retrieval.vectors import tenant_scope
from archivist.service.routers.search import public_metadata
from archivist.service.schemas import (
    ChunkOut,
    ChunkPage,
    DocumentList,
    DocumentOut,
    Problem,
    UploadAccepted,
    UploadItem,
)
from archivist.service.storage import catalog
from archivist.service.storage.database import reading
from archivist.service.storage.file_store import DOWNLOAD_BLOCK, FileStore
from archivist.validation import check_limit

MAX_OFFSET = 2**31 - 1
"""Largest chunk offset accepted (beyond any document's chunk count; stores take 32 bits)."""
MAX_CHUNK_PAGE = 500
"""Most chunks one page of `GET .../chunks` returns: a bounded response for any document."""


def _chunk_page_limit(value: int) -> int:
    return check_limit(value, maximum=MAX_CHUNK_PAGE)


ChunkPageLimit = Annotated[
    int,
    AfterValidator(_chunk_page_limit),
    Query(
        description=f"chunks per page, 0 to {MAX_CHUNK_PAGE}",
        json_schema_extra={"minimum": 0, "maximum": MAX_CHUNK_PAGE},
    ),
]
"""The page size: `archivist.validation.check_limit` with the service's maximum."""

router = APIRouter(prefix="/v1/knowledge-bases/{name}/documents", tags=["documents"])

_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "no such knowledge base or document"}
}


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    responses={
        **_NOT_FOUND,
        403: {"model": Problem, "description": "a document or storage quota would be exceeded"},
        413: {"model": Problem, "description": "the upload is larger than the limit"},
        415: {"model": Problem, "description": "a type not accepted, or content not of it"},
        422: {"model": Problem, "description": "an empty file or no `files` field"},
    },
)
async def upload_documents(
    files: Annotated[list[UploadFile], File(description="one or more files")],
    kb: KB,
    state: State,
) -> UploadAccepted:
    """Store the files (fsynced) and queue them for indexing; all are accepted or none."""
    incoming = [IncomingFile(upload.filename, upload.file) for upload in files]
    received = state.files.local_path(kb.id).parent
    model = await asyncio.to_thread(state.model_for, kb)  # its own model decides the types
    try:
        uploads = await asyncio.to_thread(
            store_uploads,
            incoming,
            received / kb.id,
            received,
            state.registry,
            state.settings.max_upload_bytes,
            tenant_scope(kb),
            model.supports_multimodal,
            model.model,
        )
    except UploadRejected as exc:
        raise HTTPException(exc.status, str(exc)) from None
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
    except BaseException as exc:
        await asyncio.to_thread(_delete_all, state.files, keys)
        if isinstance(exc, quotas.QuotaExceeded):
            raise HTTPException(status.HTTP_403_FORBIDDEN, str(exc)) from None
        raise
    state.indexer.notify()
    return UploadAccepted(
        items=[UploadItem(id=r.id, filename=r.filename, status=r.status) for r in records]
    )


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


@router.get("", responses=_NOT_FOUND)
async def list_documents(kb: KB, state: State) -> DocumentList:
    """Every document of the knowledge base with its indexing status."""
    documents = await asyncio.to_thread(catalog.list_documents, state.engine, kb.id)
    return DocumentList(items=[DocumentOut.of(d) for d in documents])


@router.get("/{document_id}", responses=_NOT_FOUND)
async def get_document(document: Document) -> DocumentOut:
    """One document's status."""
    return DocumentOut.of(document)


@router.get("/{document_id}/chunks", responses=_NOT_FOUND)
async def list_chunks(
    document: Document,
    kb: KB,
    state: State,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    limit: ChunkPageLimit = 30,
) -> ChunkPage:
    """A page of the document's stored chunks in order."""
    handle = await state.handle(kb)
    chunks = await handle.list_chunks(document.id, offset, limit)
    return ChunkPage(
        items=[
            ChunkOut(
                chunk_index=c.chunk_index,
                text=c.content.text if isinstance(c.content, TextBlock) else None,
                media_type="text/plain"
                if isinstance(c.content, TextBlock)
                else c.content.source.media_type,
                metadata=public_metadata(c.metadata),
            )
            for c in chunks
        ],
        offset=offset,
        limit=limit,
        total=document.chunk_count,
    )


@router.get(
    "/{document_id}/file",
    response_class=StreamingResponse,
    responses={
        **_NOT_FOUND,
        200: {"content": {"*/*": {"schema": {"type": "string", "format": "binary"}}}},
    },
)
async def download_file(document: Document, state: State) -> StreamingResponse:
    """The raw upload as an attachment (never rendered: `nosniff`, a sandboxing CSP)."""
    opened = await asyncio.to_thread(state.files.open, document.path)
    if opened is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"the file of {document.id!r} is gone")
    reader, size = opened

    async def blocks() -> AsyncIterator[bytes]:
        try:
            while block := await asyncio.to_thread(reader.read, DOWNLOAD_BLOCK):
                yield block
        finally:
            await asyncio.to_thread(reader.close)

    headers = {
        "Content-Length": str(size),
        "Content-Disposition": _attachment(document.filename),
        "Content-Security-Policy": DOWNLOAD_CSP,
        "X-Content-Type-Options": "nosniff",
    }
    return StreamingResponse(blocks(), media_type=document.media_type, headers=headers)


def _attachment(filename: str) -> str:
    """A Content-Disposition naming `filename` (RFC 6266, UTF-8 where it needs it)."""
    quoted = quote(filename)
    if quoted != filename:
        return f"attachment; filename*=utf-8''{quoted}"
    return f'attachment; filename="{filename}"'


@router.delete("/{document_id}", status_code=status.HTTP_204_NO_CONTENT, responses=_NOT_FOUND)
async def delete_document(document: Document, kb: KB, state: State) -> Response:
    """Delete the document: its chunks, its file and its record."""
    handle = await state.handle(kb)
    async with state.locks.hold(document.id):  # waits for a running index of it
        with contextlib.suppress(DocumentNotFoundError):
            await handle.delete_document(document.id)
        await asyncio.to_thread(catalog.delete_document, state.engine, document.id)
    folder = str(PurePosixPath(document.path).parent)
    await asyncio.to_thread(state.files.delete_folder, folder)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
