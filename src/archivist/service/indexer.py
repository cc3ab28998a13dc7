"""Background indexing: workers that lease jobs and run the library's ingest path on them.

Parsing and embedding run in threads (the parsers and the local model do so themselves),
so the event loop keeps answering searches; at most `settings.workers` documents are in
flight per process. A document id is a stable function of its stored path, so a job that
runs again after a crash replaces whatever an earlier attempt wrote, never adds to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import socket
from pathlib import Path

from sqlalchemy import Engine

from archivist.embedding import EmbeddingModelBase
from archivist.rag import ChunkerBase, DocumentNotFoundError, ParserRegistry, QdrantStore
from archivist.rag.ingest import Outcome, document_id_for, ingest_files
from archivist.service import catalog, jobs
from archivist.service.catalog import Status
from archivist.service.jobs import ClaimedJob
from archivist.service.locks import DocumentLocks
from archivist.service.settings import ServiceSettings
from archivist.service.vectors import kb_handle

logger = logging.getLogger(__name__)


class Indexer:
    """`settings.workers` tasks draining the job queue, plus one that renews their leases."""

    def __init__(
        self,
        settings: ServiceSettings,
        engine: Engine,
        store: QdrantStore,
        model: EmbeddingModelBase,
        registry: ParserRegistry,
        chunker: ChunkerBase,
        locks: DocumentLocks,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.store = store
        self.model = model
        self.registry = registry
        self.chunker = chunker
        self.locks = locks
        self.owner = f"{socket.gethostname()[:40]}-{secrets.token_hex(4)}"
        self.in_flight: dict[int, ClaimedJob] = {}
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Requeue what a dead predecessor left running (when it must be dead), then work."""
        if self.settings.single_owner:
            released = await asyncio.to_thread(jobs.release_all, self.engine)
            if released:
                logger.info("requeued %d job(s) left running by a stopped service", released)
        self._tasks = [
            asyncio.create_task(self._work(), name=f"indexer-{n}")
            for n in range(self.settings.workers)
        ]
        self._tasks.append(asyncio.create_task(self._renew_leases(), name="indexer-leases"))

    async def stop(self) -> None:
        """Cancel the workers; jobs they held stay leased and are taken up again later."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    def notify(self) -> None:
        """New jobs were queued: wake an idle worker now rather than at the next poll."""
        self._wake.set()

    async def _work(self) -> None:
        while True:
            try:
                job = await asyncio.to_thread(
                    jobs.claim,
                    self.engine,
                    self.owner,
                    self.settings.lease_seconds,
                    self.settings.max_attempts,
                )
            except Exception:
                logger.exception("claiming a job failed; retrying")
                await asyncio.sleep(self.settings.poll_seconds)
                continue
            if job is None:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.settings.poll_seconds)
                continue
            self.in_flight[job.job_id] = job
            try:
                await self._run(job)
            finally:
                del self.in_flight[job.job_id]

    async def _run(self, job: ClaimedJob) -> None:
        document = job.document
        async with self.locks.hold(document.id):
            current = await asyncio.to_thread(
                catalog.get_document, self.engine, document.kb_id, document.id
            )
            if current is None:  # deleted after it was claimed
                await asyncio.to_thread(jobs.finish, self.engine, job, Status.FAILED)
                return
            try:
                status, count, error = await self._index(job)
            except Exception as exc:
                logger.exception("indexing %s failed", document.id)
                status, count, error = Status.FAILED, 0, f"{type(exc).__name__}: {exc}"
            kept = await asyncio.to_thread(jobs.finish, self.engine, job, status, count, error)
            if not kept:  # deleted meanwhile by another replica: drop what was written
                with contextlib.suppress(DocumentNotFoundError, ValueError):
                    await kb_handle(job.kb, self.store, self.model).delete_document(document.id)

    async def _index(self, job: ClaimedJob) -> tuple[Status, int, str | None]:
        kb = kb_handle(job.kb, self.store, self.model)
        path = self.settings.files_dir / job.document.path
        if document_id_for(path, kb.metadata_filter) != job.document.id:  # as ingest derives it
            return Status.FAILED, 0, "the stored file moved since it was uploaded; upload it again"
        if job.attempt > 1:  # an earlier attempt may have left part of the document
            with contextlib.suppress(DocumentNotFoundError):
                await kb.delete_document(job.document.id)
        report = await ingest_files(kb, [path], registry=self.registry, chunker=self.chunker)
        (result,) = report.results
        if result.outcome in (Outcome.INDEXED, Outcome.UPDATED):
            return Status.READY, result.chunks, None
        if result.outcome is Outcome.UNCHANGED:
            summary = await kb.get_document(job.document.id)
            return Status.READY, 0 if summary is None else summary.chunk_count, None
        return Status.FAILED, 0, _public_error(result.error, path)

    async def _renew_leases(self) -> None:
        while True:
            await asyncio.sleep(self.settings.lease_seconds / 3)
            try:
                await asyncio.to_thread(
                    jobs.renew,
                    self.engine,
                    self.owner,
                    list(self.in_flight),
                    self.settings.lease_seconds,
                )
            except Exception:
                logger.exception("renewing job leases failed")


def _public_error(error: str | None, path: Path) -> str:
    """The error without the server's folder names."""
    text = error or "indexing failed"
    return text.replace(str(path.resolve().parent) + "/", "").replace(str(path.parent) + "/", "")
