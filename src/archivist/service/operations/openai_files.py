"""Files of the OpenAI-compatible API: upload, list, read back and delete, per tenant.

A file's bytes go to the service's file store (a directory or S3) under a folder of its own,
marked pending until the file is recorded, so a process that dies part-way leaves nothing
the sweeper does not remove.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import BinaryIO

from archivist.service.errors import InvalidRequest, NotFound, QuotaExceeded, UploadRejected
from archivist.service.state import ServiceState
from archivist.service.storage import openai_records, upload_records
from archivist.service.storage.openai_records import FileRecord

PURPOSES = ("assistants", "user_data")
"""The purposes a file may be uploaded for: those that file search reads."""
FOLDER = "openai-files"


def _key(file_id: str) -> str:
    return f"{FOLDER}/{file_id}/content"


async def create_file(
    state: ServiceState, tenant: str, filename: str | None, body: BinaryIO, purpose: str
) -> FileRecord:
    """Keep an uploaded file for the tenant; InvalidRequest for another purpose or an empty
    file, UploadRejected (413) for one over the upload limit, QuotaExceeded when the tenant's
    files would pass its storage quota."""
    if purpose not in PURPOSES:
        raise InvalidRequest(
            f"purpose {purpose!r} is not accepted here; use one of: {', '.join(PURPOSES)}",
            argument="purpose",
        )
    name = Path(filename or "upload").name[:255] or "upload"
    file_id = openai_records.new_id("file-")
    key = _key(file_id)
    folder = key.rsplit("/", 1)[0]
    await asyncio.to_thread(upload_records.mark_pending, state.engine, [folder])
    try:
        size = await asyncio.to_thread(_receive, state, key, body)
        if size == 0:
            raise InvalidRequest(f"file {name!r} is empty", argument="file")
        limit = state.settings.max_upload_bytes
        if size > limit:
            raise UploadRejected(413, f"file {name!r} is larger than the limit of {limit} bytes")
        quota = state.settings.quota_for(tenant)
        kept = await asyncio.to_thread(openai_records.tenant_files, state.engine, tenant)
        held = sum(f.bytes for f in kept)
        if held + size > quota.storage_bytes:
            raise QuotaExceeded(
                f"the tenant's files would hold {held + size} bytes; "
                f"the quota is {quota.storage_bytes}",
                quota="storage_bytes",
            )
        await asyncio.to_thread(state.files.save, key)
        record = FileRecord(
            id=file_id,
            tenant=tenant,
            filename=name,
            purpose=purpose,
            bytes=size,
            path=key,
            created_at=time.time(),
        )
        await asyncio.to_thread(openai_records.add_file, state.engine, record)
    except BaseException:
        with contextlib.suppress(Exception):
            await asyncio.to_thread(state.files.delete_folder, folder)
            await asyncio.to_thread(upload_records.clear_pending, state.engine, [folder])
        raise
    await asyncio.to_thread(upload_records.clear_pending, state.engine, [folder])
    return record


def _receive(state: ServiceState, key: str, body: BinaryIO) -> int:
    """Write `body` where the file store receives `key`, fsynced; its size."""
    path = state.files.local_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        shutil.copyfileobj(body, out, 1024 * 1024)
        out.flush()
        os.fsync(out.fileno())
        return out.tell()


async def get_file(state: ServiceState, tenant: str, file_id: str) -> FileRecord:
    """The tenant's file `file_id`; NotFound otherwise (another tenant's too)."""
    record = await asyncio.to_thread(openai_records.get_file, state.engine, tenant, file_id)
    if record is None:
        raise NotFound(f"no file {file_id!r}")
    return record


async def list_files(state: ServiceState, tenant: str, purpose: str | None) -> list[FileRecord]:
    """The tenant's files (of `purpose`), oldest first."""
    return await asyncio.to_thread(openai_records.tenant_files, state.engine, tenant, purpose)


async def delete_file(state: ServiceState, record: FileRecord) -> None:
    """Forget a file and remove its bytes (the documents made from it stay)."""
    folder = record.path.rsplit("/", 1)[0]
    await asyncio.to_thread(upload_records.mark_pending, state.engine, [folder])
    await asyncio.to_thread(openai_records.forget_file, state.engine, record.id)
    await asyncio.to_thread(state.files.delete_folder, folder)
    await asyncio.to_thread(upload_records.clear_pending, state.engine, [folder])


@contextlib.asynccontextmanager
async def local_copy(state: ServiceState, record: FileRecord) -> AsyncIterator[Path]:
    """The file's bytes on this machine for the block (fetched from S3 when kept there)."""
    fetched = state.files.fetched(record.path)
    path = await asyncio.to_thread(fetched.__enter__)
    try:
        yield path
    finally:
        await asyncio.to_thread(fetched.__exit__, None, None, None)


def content(state: ServiceState, record: FileRecord) -> Iterator[bytes]:
    """The file's bytes, in blocks; NotFound when they are gone from the file store."""
    opened = state.files.open(record.path)
    if opened is None:
        raise NotFound(f"the content of file {record.id!r} is gone")
    body, _size = opened

    def blocks() -> Iterator[bytes]:
        with body:
            while block := body.read(1024 * 1024):
                yield block

    return blocks()
