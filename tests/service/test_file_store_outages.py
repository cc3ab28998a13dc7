"""S3 out of reach, restarted empty, answering 5xx or cutting a body short: every error the
file store raises then is an outage (a 503 with Retry-After, one log line), and a download
cut short after its headers went out ends the connection without a traceback."""

from __future__ import annotations

import io
import logging
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import httpx
import pytest
from service_helpers import free_port

from archivist.service.operations import documents
from archivist.service.outages import outage_of
from archivist.service.storage.file_store import LocalFileStore, S3FileStore

pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")

KEY = "kb1/upload1/notes.txt"
BUCKET = "uploads"


def s3_client(endpoint: str) -> Any:
    """A client that tries once and waits briefly, so an outage is met at once."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1, read_timeout=1),
    )


def stage(store: S3FileStore, key: str, body: bytes) -> None:
    """Put `body` where an upload of `key` is received."""
    path = store.local_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[tuple[Any, S3FileStore]]:
    """moto's server of its own (the test may stop it) and a store holding one file on it."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    client = s3_client(f"http://127.0.0.1:{server._port}")
    bucket = f"uploads-{uuid.uuid4().hex[:12]}"  # moto keeps buckets in this process
    client.create_bucket(Bucket=bucket)
    store = S3FileStore(bucket, "prefix", tmp_path / "staging", client=client)
    stage(store, KEY, b"The harbour takes tolls at dawn.")
    store.save(KEY)
    try:
        yield server, store
    finally:
        server.stop()


def every_call(store: S3FileStore) -> dict[str, BaseException | None]:
    """What each of the store's calls raises (None: it did not)."""
    stage(store, "kb1/upload2/more.txt", b"more")
    calls: dict[str, Callable[[], object]] = {
        "open": lambda: store.open(KEY),
        "save": lambda: store.save("kb1/upload2/more.txt"),
        "fetched": lambda: store.fetched(KEY).__enter__(),
        "delete_folder": lambda: store.delete_folder("kb1/upload3"),
    }
    raised: dict[str, BaseException | None] = {}
    for name, call in calls.items():
        try:
            call()
        except Exception as exc:
            raised[name] = exc
        else:
            raised[name] = None
    return raised


def test_every_call_while_s3_is_stopped_is_an_outage(moto: tuple[Any, S3FileStore]) -> None:
    server, store = moto
    server.stop()
    raised = every_call(store)
    assert {name: outage_of(error) if error else None for name, error in raised.items()} == {
        name: "the file store" for name in raised
    }, raised


def test_a_bucket_lost_in_a_restart_is_an_outage_and_a_lost_key_is_not(
    moto: tuple[Any, S3FileStore],
) -> None:
    _, store = moto
    # What a server restarted empty answers: moto keeps its state in this process, so the
    # bucket goes the way a restart takes it (objects and all).
    for found in store.client.list_objects_v2(Bucket=store.bucket).get("Contents", []):
        store.client.delete_object(Bucket=store.bucket, Key=found["Key"])
    store.client.delete_bucket(Bucket=store.bucket)
    raised = every_call(store)
    # The object store has no bucket: until it is made again, every call is an outage.
    assert {name: outage_of(error) if error else None for name, error in raised.items()} == {
        name: "the file store" for name in raised
    }, raised
    # Once it is made again, a file it lost is gone: 404 (a download) or failed (indexing).
    store.client.create_bucket(Bucket=store.bucket)  # refilled, but without this file
    assert store.open(KEY) is None
    with pytest.raises(FileNotFoundError):
        store.fetched(KEY).__enter__()
    stage(store, KEY, b"again")
    store.save(KEY)
    opened = store.open(KEY)
    assert opened is not None and opened[0].read() == b"again"


class OneAnswer:
    """A server on 127.0.0.1 that answers every connection with `reply`, then holds the
    connection open for `hold` seconds (a stalled body) or closes it."""

    def __init__(self, reply: bytes, hold: float = 0.0) -> None:
        self.reply = reply
        self.hold = hold
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.stopped = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                connection.sendall(self.reply)
                self.stopped.wait(self.hold)

    def close(self) -> None:
        self.stopped.set()
        self.listener.close()


def answering(reply: bytes, hold: float, tmp_path: Path) -> tuple[OneAnswer, S3FileStore]:
    server = OneAnswer(reply, hold)
    return server, S3FileStore(BUCKET, "", tmp_path, client=s3_client(server.endpoint))


ERROR_BODY = b"<Error><Code>ServiceUnavailable</Code><Message>Slow down</Message></Error>"
ERROR_503 = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\n"
    + f"Content-Length: {len(ERROR_BODY)}\r\nConnection: close\r\n\r\n".encode()
    + ERROR_BODY
)
HEADERS_ONLY = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n"
    b'ETag: "x"\r\n\r\nThe harbour'
)


def test_a_5xx_answer_is_an_outage(tmp_path: Path) -> None:
    server, store = answering(ERROR_503, 0.0, tmp_path)
    try:
        with pytest.raises(Exception) as raised:
            store.open(KEY)
    finally:
        server.close()
    assert outage_of(raised.value) == "the file store", repr(raised.value)


@pytest.mark.parametrize("hold", [0.0, 3.0], ids=["connection cut", "read timed out"])
def test_a_body_cut_short_is_an_outage(tmp_path: Path, hold: float) -> None:
    server, store = answering(HEADERS_ONLY, hold, tmp_path)
    try:
        opened = store.open(KEY)
        assert opened is not None
        reader, size = opened
        assert size == 1000
        with pytest.raises(Exception) as raised:
            while reader.read(1 << 20):
                pass
    finally:
        server.close()
    assert outage_of(raised.value) == "the file store", repr(raised.value)


class CutShort(io.BytesIO):
    """A stored file whose body the object store stops sending after the first block."""

    def __init__(self, body: bytes, error: BaseException) -> None:
        super().__init__(body)
        self.error = error
        self.blocks = 0

    def read(self, size: int | None = -1, /) -> bytes:
        self.blocks += 1
        if self.blocks > 1:
            raise self.error
        return super().read(size)


def test_a_download_cut_short_by_the_file_store_is_no_traceback(
    service: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from botocore.exceptions import ResponseStreamingError

    caplog.set_level(logging.INFO)
    headers = {"Authorization": f"Bearer {service.keys['acme']}"}
    with httpx.Client(base_url=service.url, headers=headers, timeout=30) as http:
        kb = "cut-short"
        assert http.post("/v1/knowledge-bases", json={"name": kb}).status_code == 201
        files = {"files": ("tolls.txt", b"The harbour takes tolls at dawn. " * 100)}
        uploaded = http.post(f"/v1/knowledge-bases/{kb}/documents", files=files)
        document = uploaded.json()["items"][0]["id"]

        def cut_short(store: LocalFileStore, key: str) -> tuple[BinaryIO, int]:
            body = b"The harbour takes tolls at dawn. " * 100
            return CutShort(body, ResponseStreamingError(error="reset by peer")), len(body)

        monkeypatch.setattr(LocalFileStore, "open", cut_short)
        monkeypatch.setattr(documents, "DOWNLOAD_BLOCK", 64)
        with pytest.raises(httpx.HTTPError):  # headers went out: the connection is dropped
            http.get(f"/v1/knowledge-bases/{kb}/documents/{document}/file")
    assert not [record for record in caplog.records if record.exc_info], [
        record.getMessage() for record in caplog.records if record.exc_info
    ]
    assert [r for r in caplog.records if "the file store is unreachable" in r.getMessage()]
