"""A dependency that cannot be reached is 503 with Retry-After, problem+json with the
security headers, and one log line for the outage rather than a traceback per request."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx
import pytest
from machines import RestartablePostgres
from sqlalchemy.exc import OperationalError

from archivist.rag import PgVectorStore
from archivist.service.outages import OutageLog, outage_of
from archivist.service.storage import catalog
from archivist.testing.store import DIMENSIONS, record, unit


def test_connection_failures_are_outages_and_other_errors_are_not() -> None:
    refused = OperationalError("SELECT 1", {}, ConnectionRefusedError("refused"))
    assert outage_of(refused) == "the database"
    assert outage_of(ValueError("a bug")) is None
    boto = pytest.importorskip("botocore.exceptions")
    assert outage_of(boto.EndpointConnectionError(endpoint_url="http://s3")) == "the file store"
    assert outage_of(boto.ClientError({"Error": {"Code": "NoSuchKey"}}, "GetObject")) is None
    # The pgvector store's own driver: a server shut down or a pool with no connection to
    # give is an outage; what the server answered (a constraint) is not.
    psycopg = pytest.importorskip("psycopg")
    psycopg_pool = pytest.importorskip("psycopg_pool")
    assert outage_of(psycopg.errors.AdminShutdown("terminating")) == "the database"
    assert outage_of(psycopg_pool.PoolTimeout("no connection")) == "the database"
    assert outage_of(psycopg.errors.UniqueViolation("duplicate key")) is None


async def test_a_qdrant_server_out_of_reach_is_an_outage_and_its_refusals_are_not() -> None:
    pytest.importorskip("qdrant_client")
    from qdrant_client import AsyncQdrantClient
    from qdrant_client.http.exceptions import UnexpectedResponse
    from service_helpers import free_port

    client = AsyncQdrantClient(
        url=f"http://127.0.0.1:{free_port()}", timeout=2, check_compatibility=False
    )
    with pytest.raises(Exception) as raised:  # the real client, nothing listening
        await client.get_collections()
    await client.close()
    assert outage_of(raised.value) == "the vector store"
    headers = httpx.Headers()
    assert outage_of(UnexpectedResponse(503, "Service Unavailable", b"", headers)) == (
        "the vector store"
    )
    assert outage_of(UnexpectedResponse(404, "Not Found", b"", headers)) is None


def test_an_outage_is_logged_once_per_interval_with_its_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="archivist.service.outages")
    log = OutageLog()
    error = OperationalError("SELECT 1", {}, ConnectionRefusedError("refused"))
    for _ in range(5):
        log.refused("the database", error)
    log.refused("the file store", error)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 2
    assert "the database is unreachable" in lines[0] and "1 request(s)" in lines[0]
    assert "SELECT" not in "".join(lines)


def test_requests_during_a_database_outage_get_503_and_retry_after(
    service: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)

    def gone(*_: Any, **__: Any) -> None:
        raise OperationalError("SELECT knowledge_bases", {}, ConnectionRefusedError("refused"))

    monkeypatch.setattr(catalog, "list_kbs", gone)
    headers = {"Authorization": f"Bearer {service.keys['acme']}"}
    answers = [
        httpx.get(f"{service.url}/v1/knowledge-bases", headers=headers, timeout=30)
        for _ in range(3)
    ]
    for answer in answers:
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "5"
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert "database" in answer.json()["detail"]
    assert not [record for record in caplog.records if record.exc_info]  # no tracebacks
    assert len([r for r in caplog.records if "unreachable" in r.getMessage()]) <= 1


def test_an_unexpected_error_is_a_500_with_the_headers_and_one_traceback(
    service: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)

    def broken(*_: Any, **__: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(catalog, "list_kbs", broken)
    headers = {"Authorization": f"Bearer {service.keys['acme']}"}
    answer = httpx.get(f"{service.url}/v1/knowledge-bases", headers=headers, timeout=30)
    assert answer.status_code == 500
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["x-request-id"]
    assert "a bug" not in answer.text
    tracebacks = [record for record in caplog.records if record.exc_info]
    assert len(tracebacks) == 1 and tracebacks[0].name == "archivist.service.problems"


def test_liveness_stays_up_while_readiness_names_the_missing_database(
    service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archivist.service.operations import health

    def gone(*_: Any, **__: Any) -> None:
        raise OperationalError("SELECT 1", {}, ConnectionRefusedError("refused"))

    monkeypatch.setattr(health, "_ping", gone)
    ready = httpx.get(f"{service.url}/healthz", timeout=30)
    assert ready.status_code == 503 and "the database" in ready.json()["detail"]
    assert ready.headers["retry-after"] == "5"
    alive = httpx.get(f"{service.url}/livez", timeout=30)
    assert alive.status_code == 200 and alive.json() == {"status": "alive"}


@pytest.mark.heavy  # the outage must outlast the pool's back-off: some 40 s
async def test_the_pgvector_store_connects_again_promptly_after_a_long_outage() -> None:
    """The store's pool retries a lost connection with growing waits; after an outage of
    half a minute the next wait could outlast a call's own. It must not: the first search
    after the database is back succeeds."""
    psycopg_pool = pytest.importorskip("psycopg_pool")
    pg = RestartablePostgres()
    pg.start()
    try:
        async with PgVectorStore(pg.url) as store:
            await store.create_collection("docs", DIMENSIONS)
            await store.insert("docs", [record("a", 0, unit(0), total=1, text="orchids")])
            pg.stop()
            down = time.monotonic()
            with pytest.raises(psycopg_pool.PoolTimeout):
                await store.search("docs", unit(0), 1, query_text="orchids")
            await asyncio.sleep(max(0.0, 35 - (time.monotonic() - down)))
            pg.start()
            hits = await store.search("docs", unit(0), 1, query_text="orchids")
            assert [hit.document_id for hit in hits] == ["a"]
    finally:
        pg.close()
