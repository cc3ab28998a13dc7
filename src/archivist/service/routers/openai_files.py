"""`/openai/v1/files`: OpenAI's files API (upload, list, retrieve, content, delete) for code
written against OpenAI's SDKs; every call is scoped to the key's tenant."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from fastapi import APIRouter, File, Form, Query, UploadFile
from fastapi.responses import StreamingResponse

from archivist.service.dependencies import State, Tenant
from archivist.service.guards.security_headers import DOWNLOAD_CSP
from archivist.service.openai_schemas import deleted, file_object, paginate
from archivist.service.operations import openai_files as operations

# Described by OpenAI's API reference, not by this service's /openapi.json (errors differ).
router = APIRouter(prefix="/openai/v1/files", tags=["openai"], include_in_schema=False)


@router.post("")
async def create_file(
    file: Annotated[UploadFile, File()],
    purpose: Annotated[str, Form(max_length=32)],
    tenant: Tenant,
    state: State,
) -> dict[str, Any]:
    """Keep a file for later use in vector stores (`purpose` "assistants" or "user_data")."""
    record = await operations.create_file(state, tenant, file.filename, file.file, purpose)
    return file_object(record)


@router.get("")
async def list_files(
    tenant: Tenant,
    state: State,
    purpose: Annotated[str | None, Query(max_length=32)] = None,
    after: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 10_000,
    order: Literal["asc", "desc"] = "desc",
) -> dict[str, Any]:
    """The tenant's files, newest first by default."""
    records = await operations.list_files(state, tenant, purpose)
    items = [file_object(record) for record in records]
    return paginate(items, after=after, before=None, limit=limit, order=order, sorted_ids=True)


@router.get("/{file_id}")
async def retrieve_file(file_id: str, tenant: Tenant, state: State) -> dict[str, Any]:
    """One file."""
    return file_object(await operations.get_file(state, tenant, file_id))


@router.get("/{file_id}/content", response_class=StreamingResponse)
async def file_content(file_id: str, tenant: Tenant, state: State) -> StreamingResponse:
    """The file's bytes, as an attachment never rendered by a browser."""
    record = await operations.get_file(state, tenant, file_id)
    blocks = await asyncio.to_thread(operations.content, state, record)
    headers = {
        "Content-Length": str(record.bytes),
        "Content-Security-Policy": DOWNLOAD_CSP,
        "X-Content-Type-Options": "nosniff",
        "Content-Disposition": "attachment",
    }
    return StreamingResponse(blocks, media_type="application/octet-stream", headers=headers)


@router.delete("/{file_id}")
async def delete_file(file_id: str, tenant: Tenant, state: State) -> dict[str, Any]:
    """Delete the file (what vector stores made of it stays until removed there)."""
    record = await operations.get_file(state, tenant, file_id)
    await operations.delete_file(state, record)
    return deleted(record.id, "file")
