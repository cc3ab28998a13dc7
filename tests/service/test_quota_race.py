"""Quotas hold under concurrent writes: the check and the write it allows are one step,
on SQLite and on a real PostgreSQL server shared by several processes."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable

import pytest
from sqlalchemy import Connection, Engine

from archivist.service.errors import QuotaExceeded
from archivist.service.quota import Quota
from archivist.service.storage import catalog, quotas
from archivist.service.storage.catalog import NewUpload


def _slow(check: catalog.Check) -> catalog.Check:
    """`check`, then a pause inside the transaction: without the tenant's lock, every
    concurrent writer would pass its check before any of them wrote."""

    def checked(db: Connection) -> None:
        check(db)
        time.sleep(0.05)

    return checked


def _race(count: int, attempt: Callable[[int], None]) -> tuple[int, int]:
    """(passed, refused) of `count` threads running `attempt` at once."""
    passed, refused = [], []
    start = threading.Barrier(count)

    def run(n: int) -> None:
        start.wait()
        try:
            attempt(n)
        except QuotaExceeded:
            refused.append(n)
        else:
            passed.append(n)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(passed), len(refused)


def test_concurrent_uploads_never_cross_the_document_quota(engine: Engine) -> None:
    kb = catalog.create_kb(engine, "acme", "inbox", "")
    other = catalog.create_kb(engine, "globex", "inbox", "")
    quota = Quota(documents=3)

    def upload(n: int, into: catalog.KBRecord = kb) -> None:
        item = NewUpload(
            id=f"{into.tenant}-{n}",
            filename=f"{n}.txt",
            media_type="text/plain",
            path=f"{into.id}/{n}/{n}.txt",
            size=10,
        )
        check = _slow(
            lambda db: quotas.check_new_documents(db, into.tenant, quota, files=1, size=10)
        )
        catalog.add_documents(engine, into, [item], check)

    assert _race(8, upload) == (3, 5)
    assert len(catalog.list_documents(engine, kb.id)) == 3
    upload(0, other)  # another tenant's quota is its own
    assert len(catalog.list_documents(engine, other.id)) == 1


def test_concurrent_creates_never_cross_the_knowledge_base_quota(engine: Engine) -> None:
    quota = Quota(knowledge_bases=2)

    def create(n: int) -> None:
        check = _slow(lambda db: quotas.check_new_kb(db, "acme", quota))
        catalog.create_kb(engine, "acme", f"kb{n}", "", check=check)

    assert _race(6, create) == (2, 4)
    assert len(catalog.list_kbs(engine, "acme")) == 2


@pytest.mark.parametrize("size", [10, 1_000])
def test_a_refused_write_stores_nothing(engine: Engine, size: int) -> None:
    kb = catalog.create_kb(engine, "acme", "inbox", "")
    item = NewUpload(
        id="x", filename="x.txt", media_type="text/plain", path=f"{kb.id}/x/x.txt", size=size
    )
    quota = Quota(storage_bytes=100)
    check = functools.partial(
        quotas.check_new_documents, tenant="acme", quota=quota, files=1, size=size
    )
    if size > 100:
        with pytest.raises(QuotaExceeded, match="100"):
            catalog.add_documents(engine, kb, [item], check)
        assert catalog.list_documents(engine, kb.id) == []
    else:
        catalog.add_documents(engine, kb, [item], check)
        assert len(catalog.list_documents(engine, kb.id)) == 1
