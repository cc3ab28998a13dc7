"""The durable job queue on SQLite and on a real PostgreSQL server the test starts."""

from __future__ import annotations

import threading
import time

from sqlalchemy import Engine, select

from archivist.service.indexing import jobs
from archivist.service.storage import catalog
from archivist.service.storage.catalog import NewUpload, Status
from archivist.service.storage.database import jobs as jobs_table
from archivist.service.storage.database import make_engine, reading


def queue(engine: Engine, count: int, tenant: str = "t") -> tuple[catalog.KBRecord, list[str]]:
    kb = catalog.create_kb(engine, tenant, f"kb{time.monotonic_ns()}", "")
    uploads = [
        NewUpload(
            id=f"doc-{kb.id[:8]}-{n}",
            filename=f"f{n}.txt",
            media_type="text/plain",
            path=f"{kb.id}/{n}/f{n}.txt",
            size=1,
        )
        for n in range(count)
    ]
    catalog.add_documents(engine, kb, uploads)
    return kb, [u.id for u in uploads]


def test_claim_finish_in_order(engine: Engine) -> None:
    kb, ids = queue(engine, 3)
    first = jobs.claim(engine, "w1", 60, 3)
    assert first is not None and first.document.id == ids[0] and first.attempt == 1
    assert catalog.get_document(engine, kb.id, ids[0]).status is Status.INDEXING
    assert jobs.finish(engine, first, Status.READY, 7)
    done = catalog.get_document(engine, kb.id, ids[0])
    assert done.status is Status.READY and done.chunk_count == 7
    second = jobs.claim(engine, "w1", 60, 3)
    assert second is not None and second.document.id == ids[1]


def test_an_expired_lease_is_claimed_again_and_gives_up_after_max_attempts(engine: Engine) -> None:
    kb, (doc,) = queue(engine, 1)
    # a lease long enough that a loaded machine reaches the next claim within it
    held = jobs.claim(engine, "dead-worker", 2.0, 2)
    assert held is not None
    assert jobs.claim(engine, "w2", 60, 2) is None  # leased
    time.sleep(2.1)
    again = jobs.claim(engine, "w2", 0.05, 2)
    assert again is not None and again.document.id == doc and again.attempt == 2
    time.sleep(0.1)
    assert jobs.claim(engine, "w3", 60, 2) is None  # two interrupted attempts: failed
    failed = catalog.get_document(engine, kb.id, doc)
    assert failed.status is Status.FAILED and "interrupted 2 times" in failed.error
    with reading(engine) as db:
        assert db.execute(select(jobs_table)).all() == []


def test_renewed_lease_is_not_taken(engine: Engine) -> None:
    queue(engine, 1)
    held = jobs.claim(engine, "w1", 0.3, 3)
    assert held is not None
    for _ in range(3):
        time.sleep(0.15)
        assert jobs.renew(engine, "w1", [held.job_id], 0.3) == set()
        assert jobs.claim(engine, "w2", 0.3, 3) is None


def test_renewing_names_the_jobs_whose_documents_were_deleted(engine: Engine) -> None:
    _, (kept, deleted) = queue(engine, 2)
    first, second = jobs.claim(engine, "w1", 60, 3), jobs.claim(engine, "w1", 60, 3)
    assert first is not None and second is not None
    catalog.delete_document(engine, deleted)
    gone = second if second.document.id == deleted else first
    assert jobs.renew(engine, "w1", [first.job_id, second.job_id], 60) == {gone.job_id}
    assert kept in {first.document.id, second.document.id}


def test_release_all_requeues_running_jobs(engine: Engine) -> None:
    kb, (doc,) = queue(engine, 1)
    assert jobs.claim(engine, "w1", 600, 3) is not None
    assert jobs.release_all(engine) == 1
    assert catalog.get_document(engine, kb.id, doc).status is Status.QUEUED
    again = jobs.claim(engine, "w2", 600, 3)
    assert again is not None and again.attempt == 2


def test_concurrent_claimers_never_share_a_job(engine: Engine) -> None:
    _, ids = queue(engine, 40)
    claimed: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        while (job := jobs.claim(engine, name, 60, 3)) is not None:
            with lock:
                claimed.append(job.document.id)
            jobs.finish(engine, job, Status.READY, 1)

    threads = [threading.Thread(target=worker, args=(f"w{n}",)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(claimed) == sorted(ids)  # every job once: none lost, none doubled


def test_postgres_claim_skips_rows_another_replica_has_locked(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    try:
        _, ids = queue(engine, 2, tenant="skip")
        with engine.connect() as other, other.begin():  # a replica mid-claim holds job 1
            other.execute(
                select(jobs_table.c.id).where(jobs_table.c.document_id == ids[0]).with_for_update()
            )
            found: list[jobs.ClaimedJob | None] = []
            claimer = threading.Thread(target=lambda: found.append(jobs.claim(engine, "w2", 60, 3)))
            claimer.start()
            claimer.join(120)  # a claim that waited for the lock would never return here
            assert not claimer.is_alive(), "the claim blocked on the locked row"
            assert found[0] is not None and found[0].document.id == ids[1]
    finally:
        from archivist.service.storage.database import metadata

        metadata.drop_all(engine)  # leave no queued job for the next test on this server
        engine.dispose()


def test_claims_are_fair_across_tenants(engine: Engine) -> None:
    _, backlog = queue(engine, 5, tenant="bulk")
    _, (single,) = queue(engine, 1, tenant="single")
    first = jobs.claim(engine, "w1", 60, 3)
    assert first is not None and first.document.id == single  # fewest waiting goes first
    second = jobs.claim(engine, "w2", 60, 3)
    assert second is not None and second.document.id == backlog[0]  # then oldest first
    # a reserved worker takes only a tenant with nothing running: both are busy now
    assert jobs.claim(engine, "w3", 60, 3, idle_tenants_only=True) is None
    _, (newcomer,) = queue(engine, 1, tenant="newcomer")
    third = jobs.claim(engine, "w3", 60, 3, idle_tenants_only=True)
    assert third is not None and third.document.id == newcomer
    fourth = jobs.claim(engine, "w4", 60, 3)
    assert fourth is not None and fourth.document.id == backlog[1]
