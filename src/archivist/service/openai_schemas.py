"""The request and response bodies of the OpenAI-compatible files and vector-stores API, in
the shapes OpenAI's SDKs send and read."""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from archivist.service.storage.openai_records import BatchRecord, FileRecord, StoreFile, StoreView

VECTOR_STORE_PREFIX = "vs_"


class Request(BaseModel):
    """A request body: unknown fields are refused, as the schema is the contract."""

    model_config = ConfigDict(extra="forbid")


class StaticChunking(BaseModel):
    """`max_chunk_size_tokens` and `chunk_overlap_tokens` (at most half of the size)."""

    model_config = ConfigDict(extra="forbid")

    max_chunk_size_tokens: int
    chunk_overlap_tokens: int


class StaticStrategy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["static"]
    static: StaticChunking


class AutoStrategy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["auto"]


ChunkingStrategy = Annotated[StaticStrategy | AutoStrategy, Field(discriminator="type")]


class ExpiresAfter(BaseModel):
    model_config = ConfigDict(extra="forbid")

    anchor: Literal["last_active_at"]
    days: int = Field(ge=1, le=365)


Metadata = Annotated[dict[str, Annotated[str, Field(max_length=512)]], Field(max_length=16)]


class VectorStoreCreate(Request):
    name: str | None = Field(default=None, max_length=256)
    description: str | None = Field(default=None, max_length=512)
    file_ids: list[str] = Field(default_factory=list, max_length=500)
    metadata: Metadata | None = None
    chunking_strategy: ChunkingStrategy | None = None
    expires_after: ExpiresAfter | None = None


class VectorStoreUpdate(Request):
    name: str | None = Field(default=None, max_length=256)
    metadata: Metadata | None = None
    expires_after: ExpiresAfter | None = None


class StoreFileCreate(Request):
    file_id: str = Field(min_length=1, max_length=64)
    attributes: dict[str, Any] | None = None
    chunking_strategy: ChunkingStrategy | None = None


class StoreFileUpdate(Request):
    attributes: dict[str, Any] | None


class BatchFile(Request):
    file_id: str = Field(min_length=1, max_length=64)
    attributes: dict[str, Any] | None = None
    chunking_strategy: ChunkingStrategy | None = None


class BatchCreate(Request):
    file_ids: list[str] | None = Field(default=None, max_length=500)
    files: list[BatchFile] | None = Field(default=None, max_length=500)
    attributes: dict[str, Any] | None = None
    chunking_strategy: ChunkingStrategy | None = None


class RankingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ranker: str | None = Field(default=None, max_length=64)
    score_threshold: float | None = Field(default=None, ge=0.0, le=1.0)


class SearchRequest(Request):
    query: str | list[str] = Field(min_length=1)
    filters: dict[str, Any] | None = None
    max_num_results: int = Field(default=10, ge=1, le=50)
    ranking_options: RankingOptions | None = None
    rewrite_query: bool = False


def vector_store_id(kb_id: str) -> str:
    """The vector store id of knowledge base `kb_id`."""
    return VECTOR_STORE_PREFIX + kb_id


def file_object(record: FileRecord) -> dict[str, Any]:
    """A file as OpenAI's `FileObject`."""
    return {
        "id": record.id,
        "object": "file",
        "bytes": record.bytes,
        "created_at": int(record.created_at),
        "filename": record.filename,
        "purpose": record.purpose,
        "status": "processed",
        "expires_at": None,
        "status_details": None,
    }


def file_counts(files: list[StoreFile]) -> dict[str, int]:
    """`file_counts` of a vector store or batch."""
    counts = dict.fromkeys(("in_progress", "completed", "failed", "cancelled"), 0)
    for file in files:
        counts[file.status] += 1
    return {**counts, "total": len(files)}


def vector_store_object(view: StoreView, files: list[StoreFile]) -> dict[str, Any]:
    """A knowledge base as OpenAI's `VectorStore`."""
    counts = file_counts(files)
    expires_at = (
        None if view.expires_days is None else int(view.last_active_at + view.expires_days * 86400)
    )
    if expires_at is not None and expires_at <= time.time():
        status = "expired"
    else:
        status = "in_progress" if counts["in_progress"] else "completed"
    return {
        "id": vector_store_id(view.kb.id),
        "object": "vector_store",
        "created_at": int(view.kb.created_at),
        "name": view.name,
        "usage_bytes": sum(f.size for f in files if f.status == "completed"),
        "file_counts": counts,
        "status": status,
        "last_active_at": int(view.last_active_at),
        "metadata": view.metadata,
        "expires_after": None
        if view.expires_days is None
        else {"anchor": "last_active_at", "days": view.expires_days},
        "expires_at": expires_at,
    }


def store_file_object(file: StoreFile, chunk_size: int | None, overlap: int) -> dict[str, Any]:
    """A file of a vector store as OpenAI's `VectorStoreFile`."""
    return {
        "id": file.file_id,
        "object": "vector_store.file",
        "created_at": int(file.created_at),
        "usage_bytes": file.size if file.status == "completed" else 0,
        "vector_store_id": vector_store_id(file.kb_id),
        "status": file.status,
        "last_error": None
        if file.error_code is None
        else {"code": file.error_code, "message": file.error or ""},
        "attributes": file.attributes,
        "chunking_strategy": {"type": "other"}
        if chunk_size is None
        else {
            "type": "static",
            "static": {"max_chunk_size_tokens": chunk_size, "chunk_overlap_tokens": overlap},
        },
    }


def batch_object(batch: BatchRecord, files: list[StoreFile]) -> dict[str, Any]:
    """A file batch as OpenAI's `VectorStoreFileBatch`."""
    counts = file_counts(files)
    if counts["in_progress"]:
        status = "in_progress"
    elif batch.cancelled_at is not None:
        status = "cancelled"
    elif counts["failed"] and not counts["completed"]:
        status = "failed"
    else:
        status = "completed"
    return {
        "id": batch.id,
        "object": "vector_store.files_batch",
        "created_at": int(batch.created_at),
        "vector_store_id": vector_store_id(batch.kb_id),
        "status": status,
        "file_counts": counts,
    }


def page(items: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    """A cursor page: `data` and `has_more`, with the first and last ids."""
    return {
        "object": "list",
        "data": items,
        "first_id": items[0]["id"] if items else None,
        "last_id": items[-1]["id"] if items else None,
        "has_more": has_more,
    }


def deleted(object_id: str, kind: str) -> dict[str, Any]:
    """The answer to a delete (`kind`: "file", "vector_store.deleted", ...)."""
    return {"id": object_id, "object": kind, "deleted": True}


def paginate(
    items: list[dict[str, Any]],
    *,
    after: str | None,
    before: str | None,
    limit: int,
    order: Literal["asc", "desc"],
    sorted_ids: bool = False,
) -> dict[str, Any]:
    """The cursor page of `items` (oldest first) that `after`, `before`, `limit` and `order`
    ask for. A cursor that names no item (deleted meanwhile) is placed by its id where the
    ids sort as the items were made (`sorted_ids`); elsewhere the page is empty, so a client
    paging on never starts over."""
    ordered = items if order == "asc" else items[::-1]
    ids = [item["id"] for item in ordered]
    start, end = 0, len(ordered)
    if after is not None:
        start = _place(ids, after, order, sorted_ids, after=True)
    if before is not None:
        end = _place(ids, before, order, sorted_ids, after=False)
    window = ordered[start:end]
    return page(window[:limit], len(window) > limit)


def _place(ids: list[str], cursor: str, order: str, sorted_ids: bool, *, after: bool) -> int:
    """Where a page bounded by `cursor` starts (`after`) or ends in `ids`."""
    if cursor in ids:
        return ids.index(cursor) + (1 if after else 0)
    if not sorted_ids:
        return len(ids) if after else 0
    for position, item_id in enumerate(ids):
        if (item_id > cursor) if order == "asc" else (item_id < cursor):
            return position
    return len(ids)
