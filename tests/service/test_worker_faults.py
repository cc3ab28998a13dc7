"""A database or file-store error around a job never ends an indexing worker: recording a
job's outcome is tried again, a job the worker could not see through runs again once its
lease expires, a document that met an outage is `retrying` until it is tried again, and one
deleted by another replica while a worker indexes it ends its job without a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from archivist.rag.knowledge import ingest
from archivist.service import ServiceSettings, runtime
from archivist.service.indexing import indexer as indexer_module
from archivist.service.indexing import jobs
from archivist.service.indexing.uploads import IncomingFile
from archivist.service.operations import documents, knowledge_bases
from archivist.service.state import ServiceState
from archivist.service.storage import catalog
from archivist.service.storage.catalog import DocumentRecord, KBRecord


@pytest.fixture
async def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServiceState]:
    async with running(tmp_path, monkeypatch) as service:
        yield service


@pytest.fixture(params=["local", "s3"])
async def state_on_any_store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceState]:
    """The service with its files in a directory, or in a bucket on moto's S3 server."""
    files_url = None
    if request.param == "s3":
        request.getfixturevalue("aws")
        import boto3

        bucket = f"uploads-{uuid.uuid4().hex[:12]}"
        boto3.client("s3").create_bucket(Bucket=bucket)
        files_url = f"s3://{bucket}/files"
    async with running(tmp_path, monkeypatch, files_url) as service:
        yield service


@contextlib.asynccontextmanager
async def running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files_url: str | None = None
) -> AsyncIterator[ServiceState]:
    for name in ("ARCHIVIST_DATABASE_URL", "ARCHIVIST_PGVECTOR_URL", "ARCHIVIST_FILES_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(indexer_module, "BACKOFF_BASE", 0.01)
    settings = ServiceSettings(
        home=tmp_path / "home", lease_seconds=1.5, poll_seconds=0.1, files_url=files_url
    )
    async with runtime.running_service(settings) as service:
        yield ServiceState.of(service)


def failing_first(calls: int, real: Callable[..., Any]) -> Callable[..., Any]:
    """`real`, except that its first `calls` calls raise the error of a database gone away."""
    left = [calls]

    def flaky(*args: Any, **kwargs: Any) -> Any:
        if left[0] > 0:
            left[0] -= 1
            raise OperationalError("UPDATE documents", {}, ConnectionRefusedError("refused"))
        return real(*args, **kwargs)

    return flaky


async def upload(state: ServiceState, kb: KBRecord, name: str, text: str) -> DocumentRecord:
    [accepted] = await documents.upload_documents(
        state, kb, [IncomingFile(name, io.BytesIO(text.encode()))]
    )
    return accepted.document


async def settled(state: ServiceState, kb: KBRecord, document: DocumentRecord) -> DocumentRecord:
    deadline = time.monotonic() + 60
    while True:
        current = await documents.get_document(state, kb, document.id)
        if current.status in ("ready", "failed") or time.monotonic() > deadline:
            return current
        await asyncio.sleep(0.05)


async def test_recording_an_outcome_is_tried_again_while_the_database_fails(
    state: ServiceState, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="archivist.service.indexing.indexer")
    monkeypatch.setattr(jobs, "finish", failing_first(3, jobs.finish))
    kb = await knowledge_bases.create_kb(state, "acme", "notes")
    document = await upload(state, kb, "tolls.txt", "The harbour takes tolls at dawn.")
    done = await settled(state, kb, document)
    assert done.status == "ready" and done.chunk_count == 1
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1  # the first of the run of failures, not one per try
    assert "OperationalError: refused" in warned[0].getMessage()
    assert "UPDATE" not in warned[0].getMessage() and warned[0].exc_info is None


async def test_a_job_the_worker_could_not_finish_runs_again_and_the_worker_goes_on(
    state: ServiceState, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexer_module, "FINISH_ATTEMPTS", 2)
    # Every worker's first job fails to be recorded twice: each worker gives the job up.
    monkeypatch.setattr(jobs, "finish", failing_first(2 * state.settings.workers, jobs.finish))
    kb = await knowledge_bases.create_kb(state, "acme", "notes")
    first = await upload(state, kb, "tolls.txt", "The harbour takes tolls at dawn.")
    done = await settled(state, kb, first)  # leased again after 1.5 s, and recorded
    assert done.status == "ready" and done.chunk_count == 1
    later = await upload(state, kb, "ships.txt", "Ships leave the harbour at noon.")
    assert (await settled(state, kb, later)).status == "ready"
    assert len(state.indexer._tasks) == state.settings.workers + 1
    assert not [task for task in state.indexer._tasks if task.done()]


def unreachable_file_store(monkeypatch: pytest.MonkeyPatch, failures: int) -> None:
    """The file store refuses the first `failures` fetches as S3 does when it is down."""
    boto = pytest.importorskip("botocore.exceptions")
    real = indexer_module._fetched
    left = [failures]

    @contextlib.asynccontextmanager
    async def flaky(files: Any, key: str) -> AsyncIterator[Path | None]:
        if left[0] > 0:
            left[0] -= 1
            raise boto.EndpointConnectionError(endpoint_url="http://s3.invalid")
        async with real(files, key) as path:
            yield path

    monkeypatch.setattr(indexer_module, "RETRY_BASE", 0.3)
    monkeypatch.setattr(indexer_module, "_fetched", flaky)


async def test_a_file_store_outage_is_retried_and_the_document_says_so(
    state: ServiceState, monkeypatch: pytest.MonkeyPatch
) -> None:
    unreachable_file_store(monkeypatch, failures=2)
    kb = await knowledge_bases.create_kb(state, "acme", "notes")
    document = await upload(state, kb, "tolls.txt", "The harbour takes tolls at dawn.")
    seen: set[tuple[str, str | None]] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        current = await documents.get_document(state, kb, document.id)
        seen.add((current.status, current.error))
        if current.status in ("ready", "failed"):
            break
        await asyncio.sleep(0.02)
    assert current.status == "ready" and current.chunk_count == 1 and current.error is None
    retrying = [error for status, error in seen if status == "retrying"]
    assert retrying and all("the file store could not be reached" in e for e in retrying if e)


async def test_an_outage_that_outlasts_the_tries_fails_the_document_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ARCHIVIST_DATABASE_URL", "ARCHIVIST_PGVECTOR_URL", "ARCHIVIST_FILES_URL"):
        monkeypatch.delenv(name, raising=False)
    unreachable_file_store(monkeypatch, failures=100)
    settings = ServiceSettings(home=tmp_path, lease_seconds=1.5, poll_seconds=0.1, max_attempts=2)
    async with runtime.running_service(settings) as service:
        state = ServiceState.of(service)
        kb = await knowledge_bases.create_kb(state, "acme", "notes")
        document = await upload(state, kb, "tolls.txt", "The harbour takes tolls at dawn.")
        done = await settled(state, kb, document)
    assert done.status == "failed"
    assert done.error == "the file store could not be reached in 2 tries"


def deleted_by_another_replica(state: ServiceState, document: DocumentRecord) -> None:
    """Delete `document` as a replica without its indexing task does: its record and job,
    then its folder in the file store (nothing here is cancelled)."""
    catalog.delete_document(state.engine, document.id)
    state.files.delete_folder(str(PurePosixPath(document.path).parent))


@pytest.mark.parametrize("when", ["before the fetch", "after the file was read"])
async def test_a_document_deleted_while_a_worker_has_it_ends_its_job_quietly(
    state_on_any_store: ServiceState,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    when: str,
) -> None:
    state = state_on_any_store
    caplog.set_level(logging.INFO)
    kb = await knowledge_bases.create_kb(state, "acme", "notes")
    met = asyncio.Event()

    def delete_once(name: str) -> None:
        """Delete the document of `name` the first time the worker reaches the hook with it."""
        if name == "tolls.txt" and not met.is_set():
            [document] = catalog.list_documents(state.engine, kb.id)
            deleted_by_another_replica(state, document)
            met.set()

    if when == "before the fetch":
        real_fetched = indexer_module._fetched

        @contextlib.asynccontextmanager
        async def fetched(files: Any, key: str) -> AsyncIterator[Path | None]:
            delete_once(PurePosixPath(key).name)
            async with real_fetched(files, key) as path:
                yield path

        monkeypatch.setattr(indexer_module, "_fetched", fetched)
    else:  # parsed and chunked once: the stored copy goes before ingest reads it again
        real_count = ingest._count_chunks

        async def counted(parser: Any, chunker: Any, path: Path, *args: Any, **kwargs: Any) -> Any:
            found = await real_count(parser, chunker, path, *args, **kwargs)
            delete_once(path.name)
            return found

        monkeypatch.setattr(ingest, "_count_chunks", counted)
    await upload(state, kb, "tolls.txt", "The harbour takes tolls at dawn.")
    await asyncio.wait_for(met.wait(), 30)
    deadline = time.monotonic() + 30
    while state.indexer.in_flight and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert not state.indexer.in_flight
    assert await documents.list_documents(state, kb) == []
    tracebacks = [r.getMessage() for r in caplog.records if r.exc_info and r.levelno >= 30]
    assert not tracebacks, tracebacks
    later = await upload(state, kb, "ships.txt", "Ships leave the harbour at noon.")
    assert (await settled(state, kb, later)).status == "ready"
