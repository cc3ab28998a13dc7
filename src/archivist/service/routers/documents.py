"""`/v1/knowledge-bases/{name}/documents`: upload, status, chunks, raw file, delete."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, File, Header, Query, Response, UploadFile, status
from fastapi.responses import StreamingResponse
from pydantic import AfterValidator

from archivist.service.dependencies import KB, Document, State
from archivist.service.guards.security_headers import DOWNLOAD_CSP
from archivist.service.indexing.uploads import IncomingFile, RefusedUpload
from archivist.service.operations import documents as operations
from archivist.service.schemas import (
    ChunkOut,
    ChunkPage,
    DocumentList,
    DocumentOut,
    Problem,
    UploadAccepted,
    UploadItem,
    UploadRefusal,
)
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
        415: {
            "model": Problem,
            "description": "every file refused, the first for a type not accepted or content "
            "not of it (`errors` gives each file's reason)",
        },
        409: {"model": Problem, "description": "the upload took too long to be recorded"},
        422: {
            "model": Problem,
            "description": "every file refused, the first for being empty; no `files` field; "
            "or an `Idempotency-Key` already used for a different upload",
        },
    },
)
async def upload_documents(
    files: Annotated[list[UploadFile], File(description="one or more files")],
    kb: KB,
    state: State,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=255,
            pattern=r"^[\x21-\x7e]+$",
            description="a key of the client's choosing (printable ASCII, up to 255): a "
            "retry with the same key within 24 hours, on any replica, answers with the same "
            "documents instead of storing the files again",
        ),
    ] = None,
) -> UploadAccepted:
    """Store the files (fsynced) and queue them for indexing, one item per file in order.
    A file that is empty or of a type not read is refused alone: its item has `error` (the
    status it alone would get, and why) and the rest are queued; when every file is refused
    the answer is that error (415 or 422) with each file's reason. A file whose content the
    knowledge base already holds is answered with that document (`existing`), not stored
    twice; a file with a name already there but other content is a new document beside the
    old one."""
    incoming = [IncomingFile(upload.filename, upload.file) for upload in files]
    answers = await operations.upload_documents(state, kb, incoming, idempotency_key)
    return UploadAccepted(items=[_item(answer) for answer in answers])


def _item(answer: operations.Accepted | RefusedUpload) -> UploadItem:
    """One file's item of an upload's answer."""
    if isinstance(answer, RefusedUpload):
        return UploadItem(
            id=None,
            filename=answer.filename,
            status="refused",
            error=UploadRefusal(status=answer.status, detail=answer.reason),
        )
    return UploadItem(
        id=answer.document.id,
        filename=answer.document.filename,
        status=answer.document.status,
        existing=answer.existing,
    )


@router.get("", responses=_NOT_FOUND)
async def list_documents(kb: KB, state: State) -> DocumentList:
    """Every document of the knowledge base with its indexing status."""
    documents = await operations.list_documents(state, kb)
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
    chunks = await operations.list_chunks(state, kb, document, offset, limit)
    return ChunkPage(
        items=[ChunkOut.of(c) for c in chunks],
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
    stored = await operations.open_file(state, document)
    headers = {
        "Content-Length": str(stored.size),
        "Content-Disposition": _attachment(document.filename),
        "Content-Security-Policy": DOWNLOAD_CSP,
        "X-Content-Type-Options": "nosniff",
    }
    return StreamingResponse(stored.blocks(), media_type=document.media_type, headers=headers)


def _attachment(filename: str) -> str:
    """A Content-Disposition naming `filename` (RFC 6266, UTF-8 where it needs it)."""
    quoted = quote(filename)
    if quoted != filename:
        return f"attachment; filename*=utf-8''{quoted}"
    return f'attachment; filename="{filename}"'


@router.delete("/{document_id}", status_code=status.HTTP_204_NO_CONTENT, responses=_NOT_FOUND)
async def delete_document(document: Document, kb: KB, state: State) -> Response:
    """Delete the document: its chunks, its file and its record."""
    await operations.delete_document(state, kb, document)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
