"""Nothing is left behind by a process that dies: upload folders are marked pending before
anything is written and the sweeper removes those still marked after its grace period, on
both databases and both file stores; recorded uploads are never touched; staged copies go
unless their document is being indexed."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select, update

from archivist.service.indexing.sweeper import Sweeper
from archivist.service.storage import catalog, upload_records
from archivist.service.storage.catalog import NewUpload, Status
from archivist.service.storage.database import documents, pending_files
from archivist.service.storage.file_store import FileStore, S3FileStore

NAME = "合同 scan.txt"


def folder_of(kb_id: str) -> str:
    return f"{kb_id}/{uuid.uuid4().hex}"


def received(store: FileStore, folder: str, data: bytes = b"clause 7: notice periods") -> str:
    """A file received into `folder` and saved to the store, as an upload does; its key."""
    key = f"{folder}/{NAME}"
    path = store.local_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    store.save(key)
    return key


def pending(engine: Engine) -> int:
    with engine.connect() as db:
        return int(db.execute(select(func.count()).select_from(pending_files)).scalar_one())


def sweep_after(engine: Engine, store: FileStore, seconds: float, shared: bool = True) -> None:
    """One pass with a grace period `seconds` long, after waiting it out."""
    time.sleep(seconds)
    Sweeper(engine, store, seconds, shared=shared).sweep()


def test_an_upload_cut_short_is_swept_after_the_grace_period(
    engine: Engine, store: FileStore
) -> None:
    kb = catalog.create_kb(engine, "acme", "contracts", "")
    folder = folder_of(kb.id)
    upload_records.mark_pending(engine, [folder])
    key = received(store, folder)  # ... and the process dies before recording it
    Sweeper(engine, store, 3600, shared=True).sweep()
    assert store.open(key) is not None and pending(engine) == 1  # within the grace period
    sweep_after(engine, store, 0.05)
    assert store.open(key) is None
    assert pending(engine) == 0
    assert not store.local_path(folder).exists()
    Sweeper(engine, store, 0.01, shared=True).sweep()  # again: nothing left to do


def test_a_recorded_upload_is_never_swept(engine: Engine, store: FileStore) -> None:
    kb = catalog.create_kb(engine, "acme", "contracts", "")
    folder = folder_of(kb.id)
    upload_records.mark_pending(engine, [folder])
    key = received(store, folder)
    upload = NewUpload(
        id=str(uuid.uuid4()), filename=NAME, media_type="text/plain", path=key, size=3
    )
    catalog.add_documents(engine, kb, [upload], folders=[folder])
    assert pending(engine) == 0
    sweep_after(engine, store, 0.05)
    assert store.open(key) is not None


def test_an_upload_swept_before_it_is_recorded_is_refused(engine: Engine, store: FileStore) -> None:
    kb = catalog.create_kb(engine, "acme", "contracts", "")
    folder = folder_of(kb.id)
    upload_records.mark_pending(engine, [folder])
    key = received(store, folder)
    sweep_after(engine, store, 0.05)  # the upload took longer than the grace period
    upload = NewUpload(
        id=str(uuid.uuid4()), filename=NAME, media_type="text/plain", path=key, size=3
    )
    with pytest.raises(upload_records.PendingGone):
        catalog.add_documents(engine, kb, [upload], folders=[folder])
    assert catalog.list_documents(engine, kb.id) == []  # no record of a file that is gone


def test_a_deleted_document_s_file_is_swept_if_its_removal_was_cut_short(
    engine: Engine, store: FileStore
) -> None:
    kb = catalog.create_kb(engine, "acme", "contracts", "")
    folder = folder_of(kb.id)
    key = received(store, folder)
    upload = NewUpload(
        id=str(uuid.uuid4()), filename=NAME, media_type="text/plain", path=key, size=3
    )
    catalog.add_documents(engine, kb, [upload])
    catalog.delete_document(engine, upload.id)  # ... and the process dies before the file goes
    assert pending(engine) == 1
    sweep_after(engine, store, 0.05)
    assert store.open(key) is None and pending(engine) == 0


def test_a_sweeper_and_an_upload_racing_for_a_folder_never_both_win(
    engine: Engine, store: FileStore
) -> None:
    kb = catalog.create_kb(engine, "acme", "contracts", "")
    late, recorded = folder_of(kb.id), folder_of(kb.id)
    upload_records.mark_pending(engine, [late, recorded])
    uploads = {
        folder: NewUpload(
            id=str(uuid.uuid4()),
            filename=NAME,
            media_type="text/plain",
            path=received(store, folder),
            size=3,
        )
        for folder in (late, recorded)
    }
    stale = dict(upload_records.stale_pending(engine, time.time() + 1, 10))
    # The sweeper claims `late` first: its upload is then refused, not recorded.
    assert upload_records.claim_pending(engine, late, stale[late])
    with pytest.raises(upload_records.PendingGone):
        catalog.add_documents(engine, kb, [uploads[late]], folders=[late])
    # `recorded`'s upload is recorded first: the sweeper's claim fails, its files stay.
    catalog.add_documents(engine, kb, [uploads[recorded]], folders=[recorded])
    assert not upload_records.claim_pending(engine, recorded, stale[recorded])
    Sweeper(engine, store, 0.001, shared=True).sweep()  # also finishes the claimed one
    assert store.open(uploads[recorded].path) is not None
    assert store.open(uploads[late].path) is None
    assert pending(engine) == 0


@pytest.mark.parametrize("shared", [True, False], ids=["worker", "api-only"])
def test_staged_copies_go_unless_their_document_is_being_indexed(
    engine: Engine, aws: Path, tmp_path: Path, shared: bool
) -> None:
    import boto3

    bucket = f"uploads-{uuid.uuid4().hex[:12]}"
    boto3.client("s3").create_bucket(Bucket=bucket)
    store = S3FileStore(bucket, "files", aws)
    store.prepare()
    kb = catalog.create_kb(engine, "acme", "contracts", "")
    indexing, done = folder_of(kb.id), folder_of(kb.id)
    for folder in (indexing, done):
        key = received(store, folder)
        upload = NewUpload(
            id=str(uuid.uuid4()), filename=NAME, media_type="text/plain", path=key, size=3
        )
        catalog.add_documents(engine, kb, [upload])
        store.local_path(key).parent.mkdir(parents=True)
        store.local_path(key).write_bytes(b"staged")  # a worker's copy, left by its death
        store.local_path(key).with_name(".0a1b.part").write_bytes(b"half")
        if folder == indexing:
            with engine.begin() as db:
                db.execute(
                    update(documents)
                    .where(documents.c.id == upload.id)
                    .values(status=Status.INDEXING.value)
                )
    orphan = folder_of(kb.id)
    store.local_path(f"{orphan}/{NAME}").parent.mkdir(parents=True)
    store.local_path(f"{orphan}/{NAME}").write_bytes(b"an upload whose replica died")
    Sweeper(engine, store, 3600, shared=shared).sweep()
    assert store.local_path(orphan).exists()  # young: it may be an upload under way
    sweep_after(engine, store, 0.05, shared=shared)
    assert store.local_path(indexing).exists()
    assert not store.local_path(done).exists() and not store.local_path(orphan).exists()
    assert store.open(f"{done}/{NAME}") is not None  # the stored file itself stays
