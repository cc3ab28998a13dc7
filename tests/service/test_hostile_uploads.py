"""Uploads cannot take the service down: each is parsed and chunked in a child process within
memory, CPU and time limits, a file over one fails naming it, and deleting a document or a
knowledge base while it indexes stops that work at once and leaves nothing of it."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from archivist.service import ServiceSettings, runtime
from archivist.service.errors import NotFound
from archivist.service.indexing.uploads import IncomingFile
from archivist.service.operations import documents, knowledge_bases
from archivist.service.state import ServiceState
from archivist.service.storage import catalog
from archivist.service.storage.catalog import DocumentRecord, KBRecord
from factories import make_docx_bomb

pytestmark = pytest.mark.skipif(os.name != "posix", reason="limits are POSIX rlimits")

CHILD_MODULE = "archivist.rag.chunker.child_process"


@pytest.fixture
async def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServiceState]:
    """A running service whose uploads may each use 256 MiB to be parsed, renewing its job
    leases every half second."""
    for name in ("ARCHIVIST_DATABASE_URL", "ARCHIVIST_PGVECTOR_URL", "ARCHIVIST_FILES_URL"):
        monkeypatch.delenv(name, raising=False)
    settings = ServiceSettings(home=tmp_path / "home", parse_memory_mb=256, lease_seconds=1.5)
    async with runtime.running_service(settings) as service:
        yield ServiceState.of(service)


def _files(*named: tuple[str, bytes]) -> list[IncomingFile]:
    return [IncomingFile(name, io.BytesIO(body)) for name, body in named]


async def uploaded(
    state: ServiceState, kb: KBRecord, files: list[IncomingFile]
) -> list[DocumentRecord]:
    """The documents of an upload of `files`, in order."""
    return [a.document for a in await documents.upload_documents(state, kb, files)]


async def _settled(state: ServiceState, kb: KBRecord, document: DocumentRecord) -> DocumentRecord:
    deadline = time.monotonic() + 180
    while True:
        current = await documents.get_document(state, kb, document.id)
        if current.status in ("ready", "failed") or time.monotonic() > deadline:
            return current
        await asyncio.sleep(0.05)


async def _indexing(state: ServiceState, kb: KBRecord, document: DocumentRecord) -> None:
    """Wait until `document` is being indexed, its parsing child running."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        current = await documents.get_document(state, kb, document.id)
        if current.status == "indexing" and _parsing_children():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the document never started indexing")


def _parsing_children() -> list[int]:
    """Process ids of this process's parsing children that are alive."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and CHILD_MODULE.encode() in cmdline:
            found.append(int(entry.name))
    return found


def _long_text() -> bytes:
    """Text that takes minutes to embed: thousands of distinct sentences."""
    lines = (
        f"Ledger line {n}: the harbour took {n % 97} tolls from ship {n}." for n in range(60_000)
    )
    return "\n".join(lines).encode()


async def test_a_zip_bomb_fails_naming_the_memory_limit_and_the_rest_index(
    state: ServiceState, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    kb = await knowledge_bases.create_kb(state, "acme", "inbox")
    bomb, note = await uploaded(
        state,
        kb,
        _files(("quarterly-secret.docx", make_docx_bomb(60)), ("note.txt", b"Tolls are due.")),
    )
    failed = await _settled(state, kb, bomb)
    assert failed.status == "failed"
    assert failed.error is not None and "256 MiB memory limit" in failed.error
    assert "quarterly-secret.docx" in failed.error  # the tenant sees which file
    assert (await _settled(state, kb, note)).status == "ready"
    assert await documents.list_chunks(state, kb, failed, 0, 10) == []
    # The log names documents by id: the file's name stays with its tenant.
    assert not [r for r in caplog.records if "quarterly-secret" in r.getMessage()]


async def test_deleting_a_document_while_it_indexes_stops_it_at_once(
    state: ServiceState,
) -> None:
    kb = await knowledge_bases.create_kb(state, "acme", "ledgers")
    [document] = await uploaded(state, kb, _files(("ledger.txt", _long_text())))
    await _indexing(state, kb, document)
    started = time.monotonic()
    await documents.delete_document(state, kb, document)
    # Indexing the whole file takes minutes; stopping it takes the child's kill.
    assert time.monotonic() - started < 10
    assert _parsing_children() == []
    with pytest.raises(NotFound):
        await documents.get_document(state, kb, document.id)
    handle = await state.handle(kb)
    assert await handle.list_chunks(document.id, 0, 10) == []
    assert [d.document_id for d in await handle.list_documents()] == []


async def test_a_document_deleted_by_another_replica_stops_indexing_here(
    state: ServiceState,
) -> None:
    kb = await knowledge_bases.create_kb(state, "acme", "ledgers")
    [document] = await uploaded(state, kb, _files(("ledger.txt", _long_text())))
    await _indexing(state, kb, document)
    # Another replica's DELETE: the catalog row and job go, then whatever the store holds.
    await asyncio.to_thread(catalog.delete_document, state.engine, document.id)
    handle = await state.handle(kb)
    deadline = time.monotonic() + 10  # a lease renewal (0.5 s) and the child's kill
    while _parsing_children() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert _parsing_children() == []
    while state.indexer.in_flight and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not state.indexer.in_flight
    assert await handle.list_chunks(document.id, 0, 10) == []
    assert [d.document_id for d in await handle.list_documents()] == []


async def test_deleting_a_knowledge_base_while_it_indexes_stops_at_once(
    state: ServiceState,
) -> None:
    kb = await knowledge_bases.create_kb(state, "acme", "archive")
    [document] = await uploaded(state, kb, _files(("ledger.txt", _long_text())))
    await _indexing(state, kb, document)
    started = time.monotonic()
    await knowledge_bases.delete_kb(state, kb)
    assert time.monotonic() - started < 10
    assert _parsing_children() == []
    assert not await state.store.has_collection(kb.collection)
