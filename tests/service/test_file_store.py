"""The upload file stores: a local directory, and S3 on moto's server (the real boto3 client
speaking HTTP to it on loopback)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from service_helpers import free_port

from archivist.service.storage.file_store import (
    FileStore,
    FileStoreError,
    LocalFileStore,
    S3FileStore,
    open_file_store,
)

KEY = "kb1/upload1/报告 final.txt"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server_module = pytest.importorskip("moto.server")
    pytest.importorskip("boto3")
    port = free_port()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, s3_endpoint: str, tmp_path: Path) -> Path:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3_endpoint,
        "ARCHIVIST_S3_STAGING": str(tmp_path / "staging"),
    }.items():
        monkeypatch.setenv(name, value)
    return tmp_path / "staging"


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> FileStore:
    if request.param == "local":
        opened = open_file_store(None, tmp_path / "files")
    else:
        request.getfixturevalue("aws")
        import boto3

        bucket = f"uploads-{uuid.uuid4().hex[:12]}"
        boto3.client("s3").create_bucket(Bucket=bucket)
        opened = open_file_store(f"s3://{bucket}/some/prefix", tmp_path / "unused")
    opened.prepare()
    return opened


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
