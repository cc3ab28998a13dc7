"""The service's operations called directly, without HTTP, over the real state that
`runtime.running_service` opens (SQLite and Qdrant Edge under a temporary home)."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from archivist.message import TextBlock
from archivist.service import ServiceSettings, runtime
from archivist.service.errors import (
    InvalidRequest,
    KBExistsError,
    NotFound,
    QuotaExceeded,
    UploadRejected,
)
from archivist.service.indexing.jobs import ClaimedJob
from archivist.service.indexing.uploads import IncomingFile, RefusedUpload
from archivist.service.operations import documents, knowledge_bases
from archivist.service.quota import Quota
from archivist.service.state import ServiceState
from archivist.service.storage import catalog, upload_records
from archivist.service.storage.catalog import DocumentRecord, KBRecord

TEXT = b"Lighthouses guide ships past the rocks at night with a turning lamp.\n"


@pytest.fixture
async def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServiceState]:
    """A running service's state; tenant `small` may keep one knowledge base, two documents
    and 1000 bytes."""
    for name in ("ARCHIVIST_DATABASE_URL", "ARCHIVIST_PGVECTOR_URL", "ARCHIVIST_FILES_URL"):
        monkeypatch.delenv(name, raising=False)
    settings = ServiceSettings(
        home=tmp_path / "home",
        tenant_quotas={"small": Quota(knowledge_bases=1, documents=2, storage_bytes=1000)},
    )
    async with runtime.running_service(settings) as service:
        yield ServiceState.of(service)


def _files(*named: tuple[str, bytes]) -> list[IncomingFile]:
    return [IncomingFile(name, io.BytesIO(body)) for name, body in named]


async def uploaded(
    state: ServiceState, kb: KBRecord, files: list[IncomingFile]
) -> list[DocumentRecord]:
    """The documents of an upload of `files`, in order."""
    return [a.document for a in await documents.upload_documents(state, kb, files)]


def _stored(state: ServiceState, kb: KBRecord) -> list[Path]:
    """Every file the file store keeps for `kb`."""
    return [p for p in state.files.local_path(kb.id).rglob("*") if p.is_file()]


async def _ready(state: ServiceState, kb: KBRecord, document: DocumentRecord) -> DocumentRecord:
    deadline = time.monotonic() + 120
    while True:
        current = await documents.get_document(state, kb, document.id)
        if current.status in ("ready", "failed") or time.monotonic() > deadline:
            assert current.status == "ready", current.error
            return current
        await asyncio.sleep(0.05)


async def test_an_upload_is_recorded_stored_and_indexed(state: ServiceState) -> None:
    kb = await knowledge_bases.create_kb(state, "acme", "notes")
    [record] = await uploaded(state, kb, _files(("lamp.txt", TEXT)))
    assert record.filename == "lamp.txt" and record.status == "queued"
    assert [d.id for d in await documents.list_documents(state, kb)] == [record.id]
    assert len(_stored(state, kb)) == 1
    ready = await _ready(state, kb, record)
    assert ready.chunk_count >= 1
    chunks = await documents.list_chunks(state, kb, ready, 0, 10)
    assert isinstance(chunks[0].content, TextBlock) and "Lighthouses" in chunks[0].content.text
    stored = await documents.open_file(state, ready)
    assert stored.size == len(TEXT)
    assert b"".join([block async for block in stored.blocks()]) == TEXT


@pytest.mark.parametrize(
    "files",
    [
        (("a.txt", TEXT), ("b.txt", TEXT + b" b"), ("c.txt", TEXT + b" c")),  # two allowed
        (("big.txt", TEXT * 20),),  # more bytes than the tenant may store
    ],
    ids=["documents", "storage_bytes"],
)
async def test_an_upload_over_the_quota_leaves_nothing(
    state: ServiceState, files: tuple[tuple[str, bytes], ...]
) -> None:
    kb = await knowledge_bases.create_kb(state, "small", "inbox")
    with pytest.raises(QuotaExceeded):
        await documents.upload_documents(state, kb, _files(*files))
    assert _stored(state, kb) == []
    assert await documents.list_documents(state, kb) == []


async def test_a_quota_refused_when_recording_removes_the_saved_files(
    state: ServiceState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A concurrent upload may take the last of the quota between the first check and the
    write that records these: the files already in the file store go again."""
    kb = await knowledge_bases.create_kb(state, "acme", "raced")
    saved: list[str] = []
    save = state.files.save

    def recorded_save(key: str) -> None:
        saved.append(key)
        save(key)

    def refused(*args: Any, **kwargs: Any) -> list[DocumentRecord]:
        raise QuotaExceeded("quota: taken meanwhile", quota="documents")

    monkeypatch.setattr(state.files, "save", recorded_save)
    monkeypatch.setattr(catalog, "add_documents", refused)
    with pytest.raises(QuotaExceeded):
        await documents.upload_documents(
            state, kb, _files(("a.txt", TEXT), ("b.txt", TEXT + b" b"))
        )
    assert len(saved) == 2
    assert _stored(state, kb) == []
    assert await documents.list_documents(state, kb) == []


async def test_a_refused_file_is_refused_alone_and_counts_for_no_quota(
    state: ServiceState,
) -> None:
    """Tenant `small` may keep two documents of 1000 bytes: a refused file of more bytes
    between two good ones takes none of that."""
    kb = await knowledge_bases.create_kb(state, "small", "mixed")
    binary = b"\x7fELF\x02\x01\x01\x00" + bytes(4000)
    answers = await documents.upload_documents(
        state, kb, _files(("a.txt", TEXT), ("tool", binary), ("empty.txt", b""), ("b.txt", TEXT * 2))
    )
    a, tool, empty, b = answers
    assert isinstance(a, documents.Accepted) and isinstance(b, documents.Accepted)
    assert isinstance(tool, RefusedUpload) and isinstance(empty, RefusedUpload)
    assert (tool.status, empty.status) == (415, 422)
    assert "an ELF executable" in tool.reason and empty.reason == "empty.txt: the file is empty"
    listed = await documents.list_documents(state, kb)
    assert [d.id for d in listed] == [a.document.id, b.document.id]
    assert sorted(p.name for p in _stored(state, kb)) == ["a.txt", "b.txt"]
    assert await asyncio.to_thread(upload_records.stale_pending, state.engine, time.time() + 1, 10) == []
    with pytest.raises(UploadRejected) as rejected:  # every file refused: nothing to keep
        await documents.upload_documents(state, kb, _files(("empty.txt", b""), ("tool", binary)))
    assert rejected.value.status == 422
    assert "empty.txt: the file is empty; tool: unsupported file type" in str(rejected.value)
    assert len(await documents.list_documents(state, kb)) == 2


async def test_deleting_a_document_removes_its_chunks_record_and_file(
    state: ServiceState,
) -> None:
    kb = await knowledge_bases.create_kb(state, "acme", "notes")
    [kept, gone] = await uploaded(
        state, kb, _files(("kept.txt", TEXT), ("gone.txt", TEXT.replace(b"night", b"dusk")))
    )
    gone = await _ready(state, kb, gone)
    await _ready(state, kb, kept)
    await documents.delete_document(state, kb, gone)
    with pytest.raises(NotFound, match=repr(gone.id)):
        await documents.get_document(state, kb, gone.id)
    with pytest.raises(NotFound):
        await documents.open_file(state, gone)
    assert await documents.list_chunks(state, kb, gone, 0, 10) == []
    assert [d.id for d in await documents.list_documents(state, kb)] == [kept.id]
    assert [p.name for p in _stored(state, kb)] == ["kept.txt"]


async def test_a_name_taken_conflicts_and_the_quota_refuses_the_next(
    state: ServiceState,
) -> None:
    first = await knowledge_bases.create_kb(state, "small", "only", "the one allowed")
    assert await state.store.has_collection(first.collection)
    with pytest.raises(QuotaExceeded, match="1 knowledge bases"):
        await knowledge_bases.create_kb(state, "small", "second")
    other = await knowledge_bases.create_kb(state, "acme", "only")  # names are per tenant
    with pytest.raises(KBExistsError):
        await knowledge_bases.create_kb(state, "acme", "only")
    assert [kb.id for kb in await knowledge_bases.list_kbs(state, "small")] == [first.id]
    assert [kb.id for kb in await knowledge_bases.list_kbs(state, "acme")] == [other.id]


async def test_indexing_that_cannot_be_used_is_an_invalid_request(state: ServiceState) -> None:
    with pytest.raises(InvalidRequest, match="must be smaller"):
        await knowledge_bases.create_kb(state, "acme", "o", chunk_size=32, overlap=32)
    with pytest.raises(InvalidRequest):
        await knowledge_bases.create_kb(state, "acme", "m", embedding_model="no-such-model")
    assert await knowledge_bases.list_kbs(state, "acme") == []


async def test_statuses_report_the_missing_and_refuse_too_many(state: ServiceState) -> None:
    kb = await knowledge_bases.create_kb(state, "acme", "batch")
    [record] = await uploaded(state, kb, _files(("a.txt", TEXT)))
    statuses = await knowledge_bases.document_statuses(state, kb, [record.id, "nope", record.id])
    assert [d.id for d in statuses.found] == [record.id] and statuses.missing == ["nope"]
    too_many = [f"id{n}" for n in range(knowledge_bases.MAX_STATUS_IDS + 1)]
    for ids in ([], too_many):
        with pytest.raises(InvalidRequest, match="ids"):
            await knowledge_bases.document_statuses(state, kb, ids)


async def test_deleting_a_knowledge_base_removes_its_records_collection_and_files(
    state: ServiceState,
) -> None:
    kb = await knowledge_bases.create_kb(state, "acme", "doomed")
    [record] = await uploaded(state, kb, _files(("a.txt", TEXT)))
    await _ready(state, kb, record)
    await knowledge_bases.delete_kb(state, kb)
    with pytest.raises(NotFound, match="'doomed'"):
        await knowledge_bases.get_kb(state, "acme", "doomed")
    assert catalog.documents_by_id(state.engine, kb.id, [record.id]) == []
    assert not await state.store.has_collection(kb.collection)
    assert not state.files.local_path(kb.id).exists()


async def test_deleting_a_knowledge_base_waits_for_a_running_job_of_it(
    state: ServiceState,
) -> None:
    """The collection goes only after a job indexing one of its documents lets go."""
    kb = await knowledge_bases.create_kb(state, "acme", "busy")
    document = DocumentRecord(
        id="d1",
        kb_id=kb.id,
        tenant=kb.tenant,
        filename="a.txt",
        media_type="text/plain",
        path=f"{kb.id}/x/a.txt",
        size=1,
        status=catalog.Status.INDEXING,
        chunk_count=0,
        error=None,
        created_at=0.0,
        updated_at=0.0,
    )
    state.indexer.in_flight[-1] = ClaimedJob(job_id=-1, attempt=1, document=document, kb=kb)
    try:
        async with state.locks.hold(document.id):  # the job is running
            deleting = asyncio.create_task(knowledge_bases.delete_kb(state, kb))
            await asyncio.sleep(0.3)
            assert not deleting.done()
            assert await state.store.has_collection(kb.collection)
        await asyncio.wait_for(deleting, 30)
    finally:
        del state.indexer.in_flight[-1]
    assert not await state.store.has_collection(kb.collection)


async def test_the_same_content_sent_at_once_is_one_document(state: ServiceState) -> None:
    kb = await knowledge_bases.create_kb(state, "acme", "racing")
    answers = await asyncio.gather(
        *(documents.upload_documents(state, kb, _files((f"copy-{n}.txt", TEXT))) for n in range(6))
    )
    ids = {accepted.document.id for [accepted] in answers}
    assert len(ids) == 1
    assert sum(not accepted.existing for [accepted] in answers) == 1
    assert [d.id for d in await documents.list_documents(state, kb)] == list(ids)
    assert len(_stored(state, kb)) == 1
