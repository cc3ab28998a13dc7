"""The upload file stores: a local directory, and S3 on moto's server (the real boto3 client
speaking HTTP to it on loopback)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from service_helpers import free_port

from archivist.service.errors import FileStoreError
from archivist.service.storage.file_store import (
    FileStore,
    LocalFileStore,
    S3FileStore,
    open_file_store,
)

KEY = "kb1/upload1/报告 final.txt"


def receive(store: FileStore, key: str, data: bytes) -> None:
    path = store.local_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    store.save(key)


def test_a_saved_file_reads_back_and_is_fetched_for_indexing(store: FileStore) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    receive(store, KEY, data)
    opened = store.open(KEY)
    assert opened is not None
    reader, size = opened
    with reader:
        assert size == len(data)
        assert reader.read() == data
    with store.fetched(KEY) as local:
        assert local == store.local_path(KEY)
        assert local.read_bytes() == data
    if isinstance(store, S3FileStore):  # staged only while in use
        assert not store.local_path(KEY).exists()
        assert [p for p in store.staging.rglob("*") if p.is_file()] == []


def test_deleting_a_folder_removes_its_files_only(store: FileStore) -> None:
    receive(store, "kb1/a/x.txt", b"a")
    receive(store, "kb1/b/y.txt", b"b")
    store.delete_folder("kb1/a")
    assert store.open("kb1/a/x.txt") is None
    with pytest.raises(FileNotFoundError), store.fetched("kb1/a/x.txt"):
        pass
    opened = store.open("kb1/b/y.txt")
    assert opened is not None
    opened[0].close()


@pytest.mark.parametrize("key", ["../etc/passwd", "/abs", "", "a/../../b", "a\\b"])
def test_keys_cannot_leave_the_store(store: FileStore, key: str) -> None:
    with pytest.raises(ValueError, match="invalid file key"):
        store.local_path(key)


def test_urls_choose_the_store(tmp_path: Path) -> None:
    assert isinstance(open_file_store(None, tmp_path), LocalFileStore)
    assert open_file_store(str(tmp_path / "d"), tmp_path).url == str(tmp_path / "d")
    assert open_file_store(f"file://{tmp_path}/e", tmp_path).url == f"{tmp_path}/e"
    s3 = open_file_store("s3://bucket/a/b/", tmp_path)
    assert isinstance(s3, S3FileStore)
    assert (s3.bucket, s3.prefix, s3.url) == ("bucket", "a/b", "s3://bucket/a/b")
    for bad in ("s3:///nobucket", "ftp://host/x"):
        with pytest.raises(FileStoreError, match="--files-url"):
            open_file_store(bad, tmp_path)


def test_a_missing_bucket_is_named_at_start_up(aws: Path, tmp_path: Path) -> None:
    store = open_file_store("s3://no-such-bucket/x", tmp_path)
    with pytest.raises(FileStoreError, match="s3://no-such-bucket/x"):
        store.prepare()


def test_staged_copies_go_even_when_s3_is_out_of_reach(tmp_path: Path) -> None:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError

    unreachable = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{free_port()}",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1),
    )
    store = S3FileStore("bucket", "prefix", tmp_path / "staging", client=unreachable)
    staged = store.local_path(KEY)
    staged.parent.mkdir(parents=True)
    staged.write_bytes(b"received, never saved")
    with pytest.raises(BotoCoreError):
        store.delete_folder("kb1/upload1")
    assert not staged.parent.exists()


def test_deleting_a_folder_aborts_a_multipart_upload_cut_short(aws: Path) -> None:
    import boto3

    bucket = f"uploads-{uuid.uuid4().hex[:12]}"
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=bucket)
    store = open_file_store(f"s3://{bucket}/prefix", aws)
    started = s3.create_multipart_upload(Bucket=bucket, Key=f"prefix/{KEY}")
    s3.upload_part(
        Bucket=bucket,
        Key=f"prefix/{KEY}",
        UploadId=started["UploadId"],
        PartNumber=1,
        Body=b"x" * 1024,
    )
    other = s3.create_multipart_upload(Bucket=bucket, Key="prefix/kb1/upload2/other.txt")
    store.delete_folder("kb1/upload1")
    left = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    assert [u["UploadId"] for u in left] == [other["UploadId"]]
