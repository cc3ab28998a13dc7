"""Background indexing: workers that lease jobs and run the library's ingest path on them.

Parsing and embedding run in threads (the parsers and the local model do so themselves),
so the event loop keeps answering searches; at most `settings.workers` documents are in
flight per process. A document id is a stable function of its stored path, so a job that
runs again after a crash replaces whatever an earlier attempt wrote, never adds to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from sqlalchemy import Engine

from archivist.embedding import EmbeddingModelBase
from archivist.rag import ChunkerBase, DocumentNotFoundError, ParserRegistry
from archivist.rag.knowledge import factories
from archivist.rag.knowledge.ingest import Outcome, document_id_for, ingest_files
from archivist.rag.store.base import VectorStoreBase
from archivist.rag.store.keyed_lock import KeyedLocks
from archivist.service.attributes import chunk_metadata
from archivist.service.indexing import jobs
from archivist.service.indexing.health import IndexerHealth
from archivist.service.indexing.jobs import ClaimedJob
from archivist.service.indexing.notices import advise_for_the_service
from archivist.service.outages import OutageLog, outage_of
from archivist.service.public_detail import public_detail
from archivist.service.retrieval.kb_profiles import KBProfiles
from archivist.service.retrieval.tenant_cache import PRIORITY, TENANT
from archivist.service.settings import ServiceSettings
from archivist.service.storage import catalog
from archivist.service.storage.catalog import Status
from archivist.service.storage.file_store import FileStore, open_file_store

logger = logging.getLogger(__name__)

IndexObserver = Callable[[str, float], None]
"""Told each finished job's document status (ready, failed) and its indexing seconds."""


class Indexer:
    """`settings.workers` tasks draining the job queue, plus one that renews their leases."""

    def __init__(
        self,
        settings: ServiceSettings,
        engine: Engine,
        store: VectorStoreBase,
        model: EmbeddingModelBase,
        registry: ParserRegistry,
        chunker: ChunkerBase,
        locks: KeyedLocks,
        profiles: KBProfiles | None = None,
        observe: IndexObserver | None = None,
    ) -> None:
        self.settings = settings
        self.defaults = settings.default_profile()
        self.observe = observe
        self.profiles = profiles
        self.engine = engine
        self.store = store
        self.model = model
        self.registry = registry
        self.chunker = chunker
        self.locks = locks
        self.files: FileStore = open_file_store(settings.files_url, settings.files_dir)
        self.owner = f"{socket.gethostname()[:40]}-{secrets.token_hex(4)}"
        self.in_flight: dict[int, ClaimedJob] = {}
        self.health = IndexerHealth()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._indexing: dict[str, asyncio.Task[tuple[Status, int, str | None]]] = {}

    async def start(self) -> None:
        """Requeue what a dead predecessor left running (when it must be dead), then work."""
        advise_for_the_service()
        if self.settings.single_owner:
            released = await asyncio.to_thread(jobs.release_all, self.engine)
            if released:
                logger.info("requeued %d job(s) left running by a stopped service", released)
        workers = self.settings.workers
        self._tasks = [  # with 2+ workers the last serves only tenants with nothing running
            asyncio.create_task(
                self._work(reserved=workers > 1 and n == workers - 1), name=f"indexer-{n}"
            )
            for n in range(workers)
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

    def cancel(self, document_id: str) -> bool:
        """Stop indexing `document_id` in this process, if it is (its parsing child is
        killed, its partial version removed); True if it was. The job ends failed, and the
        caller deletes the document once the document's lock is free. A document deleted on
        another replica is stopped here at the next lease renewal."""
        task = self._indexing.get(document_id)
        if task is None or task.done():
            return False
        task.cancel()
        return True

    def notify(self) -> None:
        """New jobs were queued: wake an idle worker now rather than at the next poll."""
        self._wake.set()

    async def _work(self, reserved: bool = False) -> None:
        """Claim and run jobs until cancelled. No error ends the loop: when the database or
        the file store fails, the worker backs off and tries again, and a job it could not
        see through stays leased, so it runs again once its lease runs out."""
        PRIORITY.set(reserved)  # a reserved worker's embedding goes before the others'
        failures = 0
        while True:
            self._wake.clear()  # before looking, so a notify() during the claim is not lost
            try:
                job = await asyncio.to_thread(
                    functools.partial(jobs.claim, idle_tenants_only=reserved),
                    self.engine,
                    self.owner,
                    self.settings.lease_seconds,
                    self.settings.max_attempts,
                )
            except Exception as exc:
                failures += 1
                self.health.failed()
                await _back_off("claiming a job", exc, failures)
                continue
            self.health.ok(claimed=job is not None)
            if job is None:
                failures = 0
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.settings.poll_seconds)
                continue
            self.in_flight[job.job_id] = job
            try:
                await self._run(job)
            except Exception as exc:  # the database or the file store, around the job
                failures += 1
                self.health.failed()
                await _back_off(f"job {job.job_id}", exc, failures)
            else:
                failures = 0
                self.health.ok()
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
            started = time.perf_counter()
            task = asyncio.create_task(self._index(job), name=f"index-{document.id}")
            self._indexing[document.id] = task
            try:
                status, count, error = await task
            except asyncio.CancelledError:
                if _this_task_cancelled():  # the indexer stops: the job stays leased
                    raise
                logger.info("indexing %s stopped: the document is being deleted", document.id)
                status, count, error = Status.FAILED, 0, "deleted while it was being indexed"
            except Exception as exc:
                dependency = outage_of(exc)
                if dependency is not None and job.attempt < self.settings.max_attempts:
                    await self._postpone(job, dependency, exc)
                    return
                if dependency is None and await self._file_deleted(document, exc):
                    logger.info("indexing %s stopped: the document was deleted", document.id)
                    status, count, error = Status.FAILED, 0, "deleted while it was being indexed"
                elif dependency is None:
                    logger.exception("indexing %s failed", document.id)
                    status, count, error = Status.FAILED, 0, public_detail(exc)
                else:  # the document's own fault it is not, but the tries are used up
                    status, count = Status.FAILED, 0
                    error = f"{dependency} could not be reached in {job.attempt} tries"
            finally:
                del self._indexing[document.id]
            seconds = time.perf_counter() - started
            kept = await self._finish(job, status, count, error)
            if self.observe is not None:
                self.observe(status.value, seconds)
            if not kept:  # deleted meanwhile by another replica: drop what was written
                with contextlib.suppress(DocumentNotFoundError, ValueError):
                    handle = factories.knowledge_base(
                        job.kb.profile(self.defaults), self.store, self.model
                    )
                    await handle.delete_document(document.id)

    async def _file_deleted(self, document: catalog.DocumentRecord, error: Exception) -> bool:
        """Whether `error` is the document's file going with the document, deleted by another
        replica while this one indexed it (that replica cannot stop the work here)."""
        if not isinstance(error, FileNotFoundError):
            return False
        current = await asyncio.to_thread(
            catalog.get_document, self.engine, document.kb_id, document.id
        )
        return current is None

    async def _postpone(self, job: ClaimedJob, dependency: str, error: Exception) -> None:
        """Try `job` again after a pause that doubles with each try (RETRY_BASE s first),
        its document `retrying` meanwhile with why."""
        delay = min(RETRY_CAP, RETRY_BASE * 2 ** (job.attempt - 1))
        _postponed.refused(dependency, error)
        reason = (
            f"{dependency} could not be reached; trying again in {delay:g} s "
            f"(try {job.attempt} of {self.settings.max_attempts})"
        )
        await asyncio.to_thread(jobs.postpone, self.engine, job, delay, reason)

    async def _finish(self, job: ClaimedJob, status: Status, count: int, error: str | None) -> bool:
        """Record the job's outcome, trying again for about a minute while the database
        fails; past that the error is raised and the job, still leased, runs again later."""
        for attempt in range(1, FINISH_ATTEMPTS + 1):
            try:
                return await asyncio.to_thread(jobs.finish, self.engine, job, status, count, error)
            except Exception as exc:
                if attempt == FINISH_ATTEMPTS:
                    raise
                await _back_off(f"recording job {job.job_id}", exc, attempt)
        raise AssertionError("unreachable")

    async def _index(self, job: ClaimedJob) -> tuple[Status, int, str | None]:
        TENANT.set(job.kb.tenant)  # this task's embedding-cache entries are the tenant's own
        model, chunker = self.model, self.chunker
        if self.profiles is not None:  # the knowledge base's own model and chunk sizes
            record = await asyncio.to_thread(catalog.with_settings, self.engine, job.kb)
            model = await asyncio.to_thread(self.profiles.model, record)
            chunker = await asyncio.to_thread(self.profiles.chunker, record)
        kb = factories.knowledge_base(job.kb.profile(self.defaults), self.store, model)
        path = self.files.local_path(job.document.path)
        if document_id_for(path, kb.metadata_filter) != job.document.id:  # as ingest derives it
            return Status.FAILED, 0, "the stored file moved since it was uploaded; upload it again"
        if job.attempt > 1:  # an earlier attempt may have left part of the document
            with contextlib.suppress(DocumentNotFoundError):
                await kb.delete_document(job.document.id)
        async with _fetched(self.files, job.document.path) as local:
            if local is None:
                return Status.FAILED, 0, "the stored file is gone; upload it again"
            # read as the type the upload was accepted as, whatever this machine would guess
            registry = self.registry.reading_as(job.document.media_type)
            attributes = await asyncio.to_thread(
                catalog.document_attributes_of, self.engine, job.document.id
            )
            report = await ingest_files(
                kb,
                [local],
                registry=registry,
                chunker=chunker,
                extra_metadata={local: chunk_metadata(attributes)},
            )
        (result,) = report.results
        if result.outcome in (Outcome.INDEXED, Outcome.UPDATED):
            return Status.READY, result.chunks, None
        if result.outcome is Outcome.UNCHANGED:
            summary = await kb.get_document(job.document.id)
            return Status.READY, 0 if summary is None else summary.chunk_count, None
        if result.cause is not None:
            if outage_of(result.cause) is not None:
                raise result.cause  # not the file's fault: tried again later
            return Status.FAILED, 0, public_detail(result.cause)
        return Status.FAILED, 0, result.error or "indexing failed"  # ingest's own words

    async def _renew_leases(self) -> None:
        """Keep this process's jobs leased, and stop the work of any whose document was
        deleted meanwhile (by any replica): its job is gone."""
        failures = 0
        while True:
            await asyncio.sleep(self.settings.lease_seconds / 3)
            held = dict(self.in_flight)
            try:
                gone = await asyncio.to_thread(
                    jobs.renew, self.engine, self.owner, list(held), self.settings.lease_seconds
                )
            except Exception as exc:
                failures += 1
                self.health.failed()
                log_failure("renewing job leases", exc, failures)
                continue
            failures = 0
            if held:  # with nothing held, renewing does not reach the database
                self.health.ok()
            for job_id in gone:
                self.cancel(held[job_id].document.id)


_postponed = OutageLog("document(s) put back to try again")
RETRY_BASE = 30.0
"""Seconds before a job that met an outage runs again; doubled for each later try."""
RETRY_CAP = 600.0
FINISH_ATTEMPTS = 6
"""Tries to record a job's outcome (backing off up to BACKOFF_CAP s between them)."""
BACKOFF_BASE = 0.5
BACKOFF_CAP = 30.0


async def _back_off(what: str, error: Exception, failures: int) -> None:
    """Wait before the next try after `failures` failures in a row: exponential with full
    jitter (workers that failed together do not retry together), capped at BACKOFF_CAP s."""
    delay = random.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * 2 ** min(failures, 16)))
    log_failure(what, error, failures, f"; trying again in {delay:.1f} s")
    await asyncio.sleep(delay)


def log_failure(what: str, error: Exception, failures: int, then: str = "") -> None:
    """One warning for the first of a run of failures and every tenth, naming the error
    without a database error's SQL and parameters; the traceback at debug."""
    if failures == 1 or failures % 10 == 0:
        # The driver's own words (a database error's SQL and parameters stay out of the log).
        cause = str(getattr(error, "orig", None) or error).strip().splitlines()[:1]
        logger.warning(
            "%s failed (%s: %s; %d in a row)%s",
            what,
            type(error).__name__,
            cause[0][:200] if cause else "",
            failures,
            then,
        )
    logger.debug("%s failed", what, exc_info=error)


def _this_task_cancelled() -> bool:
    """Whether the running task itself is being cancelled (not only a task it awaited)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


@contextlib.asynccontextmanager
async def _fetched(files: FileStore, key: str) -> AsyncIterator[Path | None]:
    """The stored file of `key` on local disk while the block runs (None if it is gone)."""
    held = files.fetched(key)
    try:
        path = await asyncio.to_thread(held.__enter__)
    except FileNotFoundError:
        yield None
        return
    try:
        yield path
    finally:
        await asyncio.to_thread(held.__exit__, None, None, None)
