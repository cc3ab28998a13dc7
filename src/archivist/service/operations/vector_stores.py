"""Vector stores of the OpenAI-compatible API: knowledge bases seen as OpenAI sees them, the
files added to them (each becomes a document, indexed as any upload), file batches, search.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from archivist.rag import VectorSearchResult
from archivist.rag.knowledge.profile import KnowledgeProfile
from archivist.rag.store.search_filter import AllOf, AnyOf, Compare, Condition, SearchFilter
from archivist.service.attributes import check_attributes, metadata_key
from archivist.service.errors import (
    Conflict,
    InvalidRequest,
    KBExistsError,
    NotFound,
    UploadRejected,
)
from archivist.service.indexing.uploads import IncomingFile, RefusedUpload
from archivist.service.openai_schemas import VECTOR_STORE_PREFIX
from archivist.service.operations import documents, knowledge_bases, openai_files
from archivist.service.state import ServiceState
from archivist.service.storage import catalog, openai_records
from archivist.service.storage.catalog import KBRecord as KBRecord
from archivist.service.storage.openai_records import BatchRecord, StoreView
from archivist.service.storage.openai_records import StoreFile as StoreFile
from archivist.validation import KB_NAME_PATTERN

_KB_NAME = re.compile(KB_NAME_PATTERN)
_ERROR_CODES = {415: "unsupported_file", 422: "invalid_file"}
"""The `last_error.code` of a file refused at upload, by the refusal's status."""


@dataclass(frozen=True)
class Chunking:
    """A vector store's chunking in OpenAI's terms (None: the service's defaults)."""

    max_chunk_size_tokens: int
    chunk_overlap_tokens: int


CHUNK_TOKENS = (100, 4096)
"""The bounds OpenAI sets on `max_chunk_size_tokens`."""


def check_chunking(chunking: Chunking | None) -> None:
    """InvalidRequest unless the chunk size is within `CHUNK_TOKENS` and the overlap at most
    half of it, as OpenAI rules."""
    if chunking is None:
        return
    low, high = CHUNK_TOKENS
    if not low <= chunking.max_chunk_size_tokens <= high:
        raise InvalidRequest(
            f"max_chunk_size_tokens must be from {low} to {high}", argument="chunking_strategy"
        )
    if chunking.chunk_overlap_tokens < 0:
        raise InvalidRequest(
            "chunk_overlap_tokens must not be negative", argument="chunking_strategy"
        )
    if chunking.chunk_overlap_tokens * 2 > chunking.max_chunk_size_tokens:
        raise InvalidRequest(
            "chunk_overlap_tokens must not exceed half of max_chunk_size_tokens",
            argument="chunking_strategy",
        )


# Vector stores


async def get_store(state: ServiceState, tenant: str, vector_store_id: str) -> KBRecord:
    """The tenant's knowledge base behind `vector_store_id`; NotFound otherwise."""
    kb_id = kb_id_of(vector_store_id)
    kb = (
        None
        if kb_id is None
        else await asyncio.to_thread(openai_records.kb_by_id, state.engine, tenant, kb_id)
    )
    if kb is None:
        raise NotFound(f"no vector store {vector_store_id!r}")
    return kb


def kb_id_of(vector_store_id: str) -> str | None:
    """The knowledge base id a vector store id names, or None when it names none."""
    if not vector_store_id.startswith(VECTOR_STORE_PREFIX):
        return None
    return vector_store_id.removeprefix(VECTOR_STORE_PREFIX) or None


async def create_store(
    state: ServiceState,
    tenant: str,
    *,
    name: str | None,
    description: str | None,
    metadata: dict[str, str] | None,
    chunking: Chunking | None,
    expires_days: int | None,
) -> KBRecord:
    """A new knowledge base seen as a vector store: named `name` where that is a free, valid
    knowledge-base name, else a generated one (the vector store keeps `name` as given)."""
    check_chunking(chunking)
    size = None if chunking is None else chunking.max_chunk_size_tokens
    overlap = None if chunking is None else chunking.chunk_overlap_tokens
    wanted = await _kb_name(state, tenant, name)
    for kb_name in (wanted, _generated_name()):
        try:
            kb = await knowledge_bases.create_kb(
                state, tenant, kb_name, description or "", chunk_size=size, overlap=overlap
            )
            break
        except KBExistsError:  # another request took the name meanwhile: a generated one
            if kb_name != wanted:
                raise
    else:
        raise AssertionError("unreachable")
    await asyncio.to_thread(
        openai_records.set_view,
        state.engine,
        kb.id,
        name=name or "",
        metadata=metadata or {},
        expires_days=expires_days,
    )
    return kb


async def _kb_name(state: ServiceState, tenant: str, name: str | None) -> str:
    if name and _KB_NAME.fullmatch(name):
        taken = await asyncio.to_thread(catalog.get_kb, state.engine, tenant, name)
        if taken is None:
            return name
    return _generated_name()


def _generated_name() -> str:
    return f"vs-{uuid.uuid4().hex[:12]}"


async def views(state: ServiceState, kbs: list[KBRecord]) -> list[StoreView]:
    """Each knowledge base as a vector store."""
    return await asyncio.to_thread(openai_records.views, state.engine, kbs)


async def list_stores(state: ServiceState, tenant: str) -> list[StoreView]:
    """The tenant's knowledge bases as vector stores, oldest first."""
    kbs = await knowledge_bases.list_kbs(state, tenant)
    kbs.sort(key=lambda kb: (kb.created_at, kb.id))
    return await views(state, kbs)


async def update_store(
    state: ServiceState,
    kb: KBRecord,
    *,
    name: str | None,
    metadata: dict[str, str] | None,
    expires_days: int | None,
    expiry_given: bool,
) -> None:
    """Change a vector store's name, metadata or expiry (its knowledge base keeps its name)."""
    [view] = await views(state, [kb])
    await asyncio.to_thread(
        openai_records.set_view,
        state.engine,
        kb.id,
        name=view.name if name is None else name,
        metadata=view.metadata if metadata is None else metadata,
        expires_days=expires_days if expiry_given else view.expires_days,
    )


async def store_files(
    state: ServiceState, kb: KBRecord, *, batch_id: str | None = None
) -> list[StoreFile]:
    """The files of a vector store (of one batch), oldest first."""
    return await asyncio.to_thread(
        openai_records.store_files, state.engine, kb.id, batch_id=batch_id
    )


def profile_of(state: ServiceState, kb: KBRecord) -> KnowledgeProfile:
    """How the knowledge base cuts its files (its own settings, else the service's), with
    the chunk size it cuts where it chose none (its model's input length)."""
    record = catalog.with_settings(state.engine, kb)
    profile = record.profile(state.settings.default_profile())
    if profile.chunk_size is None and state.profiles is not None:
        cuts = state.profiles.chunk_size_for(profile)
        return profile.model_copy(update={"chunk_size": cuts})
    return profile


# Files of a vector store


async def add_file(
    state: ServiceState,
    kb: KBRecord,
    file_id: str,
    attributes: Mapping[str, Any] | None,
    *,
    batch_id: str | None = None,
    chunking: Chunking | None = None,
) -> StoreFile:
    """Add the tenant's file `file_id` to the vector store: it becomes a document, queued for
    indexing with `attributes` on its chunks. A file of a type not read, or empty, is
    recorded failed; NotFound when the tenant has no such file."""
    checked = check_attributes(attributes)
    check_chunking(chunking)
    if chunking is not None:
        profile = await asyncio.to_thread(profile_of, state, kb)
        wanted = (chunking.max_chunk_size_tokens, chunking.chunk_overlap_tokens)
        if wanted != (profile.chunk_size, profile.overlap):
            raise InvalidRequest(
                f"this vector store cuts chunks of {profile.chunk_size} tokens with "
                f"{profile.overlap} overlap; a file cannot choose other sizes",
                argument="chunking_strategy",
            )
    record = await openai_files.get_file(state, kb.tenant, file_id)
    already = await asyncio.to_thread(
        openai_records.store_files, state.engine, kb.id, file_id=file_id
    )
    if already and already[0].status not in ("failed", "cancelled"):
        # added before: it stays one document, now with these attributes
        if already[0].attributes != checked:
            return await update_attributes(state, kb, already[0], checked)
        return already[0]
    if already:  # failed or cancelled before: it is added again from the start
        await remove_file(state, kb, already[0])
    document_id: str | None = None
    code: str | None = None
    error: str | None = None
    async with openai_files.local_copy(state, record) as path:
        with path.open("rb") as body:
            try:
                answers = await documents.upload_documents(
                    state,
                    kb,
                    [IncomingFile(record.filename, body)],
                    attributes=checked,
                    own_document=True,  # each file its own attributes, even with equal bytes
                )
            except UploadRejected as exc:
                if exc.status not in _ERROR_CODES:
                    raise
                code, error = _ERROR_CODES[exc.status], str(exc)
                answers = []
    for answer in answers:
        if isinstance(answer, RefusedUpload):
            code, error = _ERROR_CODES.get(answer.status, "invalid_file"), answer.reason
        else:
            document_id = answer.document.id
    await asyncio.to_thread(
        openai_records.add_store_file,
        state.engine,
        kb.id,
        file_id,
        document_id=document_id,
        attributes=checked,
        batch_id=batch_id,
        error_code=code,
        error=error,
    )
    await asyncio.to_thread(openai_records.touch, state.engine, kb.id)
    return await get_store_file(state, kb, file_id)


async def get_store_file(state: ServiceState, kb: KBRecord, file_id: str) -> StoreFile:
    """File `file_id` of the vector store; NotFound otherwise."""
    found = await asyncio.to_thread(
        openai_records.store_files, state.engine, kb.id, file_id=file_id
    )
    if not found:
        raise NotFound(f"no file {file_id!r} in this vector store")
    return found[0]


async def update_attributes(
    state: ServiceState, kb: KBRecord, file: StoreFile, attributes: Mapping[str, Any] | None
) -> StoreFile:
    """Replace a file's attributes; its document is indexed again to carry them."""
    checked = check_attributes(attributes)
    await asyncio.to_thread(
        openai_records.set_store_file, state.engine, kb.id, file.file_id, attributes=checked
    )
    if file.document_id is not None:
        await asyncio.to_thread(catalog.set_attributes, state.engine, file.document_id, checked)
        state.indexer.notify()
    return await get_store_file(state, kb, file.file_id)


async def remove_file(state: ServiceState, kb: KBRecord, file: StoreFile) -> None:
    """Take a file out of the vector store: its document and chunks go (the File stays)."""
    document_id = await asyncio.to_thread(
        openai_records.remove_store_file, state.engine, kb.id, file.file_id
    )
    if document_id is not None:
        with_document = await asyncio.to_thread(
            catalog.get_document, state.engine, kb.id, document_id
        )
        if with_document is not None:
            await documents.delete_document(state, kb, with_document)


async def parsed_text(state: ServiceState, kb: KBRecord, file: StoreFile) -> list[str]:
    """The text of a file's chunks, in order (none before it is indexed)."""
    if file.document_id is None:
        return []
    handle = await state.handle(kb)
    texts = []
    offset = 0
    while True:
        chunks = await handle.list_chunks(file.document_id, offset=offset, limit=500)
        texts += [getattr(chunk.content, "text", "") or "" for chunk in chunks]
        if len(chunks) < 500:
            return texts
        offset += len(chunks)


# File batches


async def create_batch(
    state: ServiceState,
    kb: KBRecord,
    files: Sequence[tuple[str, Mapping[str, Any] | None]],
    chunking: Chunking | None,
) -> BatchRecord:
    """A batch adding each `(file_id, attributes)` to the vector store; every file is
    checked to be the tenant's before any is added."""
    for file_id, attributes in files:
        await openai_files.get_file(state, kb.tenant, file_id)
        check_attributes(attributes)
    batch = await asyncio.to_thread(openai_records.add_batch, state.engine, kb.id)
    for file_id, attributes in files:
        await add_file(state, kb, file_id, attributes, batch_id=batch.id, chunking=chunking)
    return batch


async def get_batch(state: ServiceState, kb: KBRecord, batch_id: str) -> BatchRecord:
    """Batch `batch_id` of the vector store; NotFound otherwise."""
    batch = await asyncio.to_thread(openai_records.get_batch, state.engine, kb.id, batch_id)
    if batch is None:
        raise NotFound(f"no file batch {batch_id!r} in this vector store")
    return batch


async def cancel_batch(state: ServiceState, kb: KBRecord, batch: BatchRecord) -> None:
    """Stop a batch: its files still being indexed are taken out and marked cancelled;
    Conflict when none is left to stop."""
    files = await store_files(state, kb, batch_id=batch.id)
    running = [f for f in files if f.status == "in_progress"]
    if batch.cancelled_at is not None or not running:
        raise Conflict("the file batch has finished; there is nothing to cancel")
    for file in running:
        await remove_file(state, kb, file)
        await asyncio.to_thread(
            openai_records.add_store_file,
            state.engine,
            kb.id,
            file.file_id,
            document_id=None,
            attributes=file.attributes,
            batch_id=batch.id,
        )
        await asyncio.to_thread(
            openai_records.set_store_file,
            state.engine,
            kb.id,
            file.file_id,
            status="cancelled",
            error_code=None,
            error=None,
        )
    await asyncio.to_thread(openai_records.cancel_batch, state.engine, batch.id)


# Search


@dataclass(frozen=True)
class Found:
    """A search hit with the file it came from."""

    result: VectorSearchResult
    file_id: str
    filename: str


async def search(
    state: ServiceState,
    kb: KBRecord,
    queries: Sequence[str],
    *,
    filters: Mapping[str, Any] | None,
    max_num_results: int,
    score_threshold: float | None,
) -> list[Found]:
    """The best chunks for `queries` among the vector store's, within `filters` (run by the
    store on the files' attributes), by relevance."""
    condition = None if filters is None else openai_condition(filters)
    handle = await state.handle(kb)
    results = await handle.search(
        list(queries) if len(queries) > 1 else queries[0],
        top_k=max_num_results,
        search_filter=None if condition is None else SearchFilter(match=condition),
        min_relevance=score_threshold,
    )
    await asyncio.to_thread(openai_records.touch, state.engine, kb.id)
    ids = sorted({r.document_id for r in results})
    files = await asyncio.to_thread(openai_records.files_of_documents, state.engine, kb.id, ids)
    return [
        Found(r, files.get(r.document_id, r.document_id), r.chunk.source or "") for r in results
    ]


_COMPARISONS = {"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"}
_MAX_DEPTH = 8
MAX_LIST_VALUES = 100
"""Most values an `in` or `nin` filter may list."""


def openai_condition(filters: Mapping[str, Any], depth: int = 0) -> Condition:
    """OpenAI's comparison or compound filter as the store's condition on attributes;
    InvalidRequest naming what is wrong."""
    if not isinstance(filters, Mapping):
        raise InvalidRequest("a filter must be an object", argument="filters")
    if depth > _MAX_DEPTH:
        raise InvalidRequest(f"filters nest deeper than {_MAX_DEPTH}", argument="filters")
    kind = filters.get("type")
    if kind in ("and", "or"):
        parts = filters.get("filters")
        if not isinstance(parts, list) or not parts:
            raise InvalidRequest(
                f"an {kind!r} filter needs a non-empty list of filters", argument="filters"
            )
        extra = set(filters) - {"type", "filters"}
        if extra:
            raise InvalidRequest(f"unknown filter fields: {sorted(extra)}", argument="filters")
        inner = tuple(openai_condition(part, depth + 1) for part in parts)
        try:
            return AllOf(all=inner) if kind == "and" else AnyOf(any=inner)
        except ValueError as exc:
            raise InvalidRequest(f"filters: {_first_line(exc)}", argument="filters") from None
    if kind not in _COMPARISONS:
        raise InvalidRequest(
            f"filter type {kind!r}: use one of {', '.join(sorted(_COMPARISONS))}, and, or",
            argument="filters",
        )
    extra = set(filters) - {"type", "key", "value"}
    if extra:
        raise InvalidRequest(f"unknown filter fields: {sorted(extra)}", argument="filters")
    key = filters.get("key")
    if not isinstance(key, str):
        raise InvalidRequest("a comparison filter needs a string key", argument="filters")
    check_attributes({key: ""}, "filters")
    value = filters.get("value")
    if isinstance(value, list):
        if len(value) > MAX_LIST_VALUES:
            raise InvalidRequest(
                f"filter on {key!r} lists more than {MAX_LIST_VALUES} values", argument="filters"
            )
        value = tuple(value)
    try:
        return Compare(key=metadata_key(key), op=kind, value=value)
    except ValueError as exc:
        raise InvalidRequest(f"filter on {key!r}: {_first_line(exc)}", argument="filters") from None


def _first_line(error: ValueError) -> str:
    """What is wrong, in one line: a ValidationError's first complaint."""
    if isinstance(error, ValidationError) and error.errors():
        return str(error.errors()[0]["msg"])
    return str(error)
