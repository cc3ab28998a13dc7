"""What an operator watches on a real `archivist serve`: /metrics and `--log-format json`.

The metrics must move with the traffic (requests by route template and status, the indexed
document, embedding calls, the queue) and the JSON log must give each request its id; neither
may ever carry the tenant's key, knowledge-base name, file name, document or query text.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from service_helpers import ServeProcess, client, free_port, new_key, wait_final

from archivist.cli.main import main
from archivist.service import ServiceSettings
from archivist.service.indexing.queue_metrics import QUEUE_READ_SECONDS
from archivist.service.telemetry.request_id import request_id_for
from child_process import wait_ready
from pgvector_server import fresh_database, pgvector_server

KB = "kb-zanzibar-ledger"
FILENAME = "walrus-minutes.txt"
DOCUMENT_MARKER = "quokkafjordmarker"
QUERY_MARKER = "ocelotquerymarker"
SEARCH_ID = "obs-search-1"
CREATE_ID = "obs-create.2:x"
BROKEN_QUEUE_ID = "obs-broken-queue"
HOSTILE_ID = "evil id\twith spaces " + "x" * 200

Labels = tuple[tuple[str, str], ...]


@dataclass
class Observed:
    """What one session of traffic against `archivist serve --log-format json` left."""

    key: str
    before: dict[tuple[str, Labels], float]
    after: dict[tuple[str, Labels], float]
    after_text: str
    scrape: httpx.Response
    broken_scrape: httpx.Response
    echoed: dict[str, str]
    log: str


def samples(text: str) -> dict[tuple[str, Labels], float]:
    """Every sample of a Prometheus text exposition: (name, sorted labels) -> value."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(found: dict[tuple[str, Labels], float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    home: Path = tmp_path_factory.mktemp("observed")
    key = new_key(ServiceSettings(home=home), "acme")
    serve = ServeProcess(home, free_port(), "--log-format", "json")
    serve.start()
    echoed: dict[str, str] = {}
    try:
        before = httpx.get(f"{serve.url}/metrics", timeout=30)
        with client(serve.url, key) as http:
            no_key = httpx.get(
                f"{serve.url}/v1/knowledge-bases/{KB}/documents",
                headers={"X-Request-ID": HOSTILE_ID},
                timeout=30,
            )
            assert no_key.status_code == 401
            echoed["hostile"] = no_key.headers["x-request-id"]
            created = http.post(
                "/v1/knowledge-bases", json={"name": KB}, headers={"X-Request-ID": CREATE_ID}
            )
            assert created.status_code == 201, created.text
            echoed["create"] = created.headers["x-request-id"]
            text = f"The {DOCUMENT_MARKER} ledger records every orchard harvest by season.\n"
            uploaded = http.post(
                f"/v1/knowledge-bases/{KB}/documents",
                files=[("files", (FILENAME, text.encode(), "text/plain"))],
            )
            assert uploaded.status_code == 202, uploaded.text
            echoed["upload"] = uploaded.headers["x-request-id"]
            (document,) = wait_final(http, KB)
            assert document["status"] == "ready", document
            found = http.post(
                f"/v1/knowledge-bases/{KB}/search",
                json={"query": f"{QUERY_MARKER} orchard harvest"},
                headers={"X-Request-ID": SEARCH_ID},
            )
            assert found.status_code == 200, found.text
            assert DOCUMENT_MARKER in found.text  # the marker was indexed, so it could leak
            echoed["search"] = found.headers["x-request-id"]
            too_big = http.post(  # refused by the body limit, before routing
                f"/v1/knowledge-bases/{KB}/search",
                content=b"{" + b" " * (300 * 1024) + b"}",
                headers={"content-type": "application/json"},
            )
            assert too_big.status_code == 413
            # a key and a query in a query string, odd methods and unknown paths: none of it
            # may reach a label or a log line
            leaky = http.get("/healthz", params={"token": key, "q": QUERY_MARKER})
            assert leaky.status_code == 200
            assert http.request("PURGE", f"/v1/knowledge-bases/{KB}/x").status_code == 404
            assert http.get(f"/{KB}/{FILENAME}").status_code == 404
        scrape = httpx.get(f"{serve.url}/metrics", timeout=30)
        assert scrape.status_code == 200
        # A queue that cannot be read: the scrape still answers, and the warning it logs
        # carries the scrape's request id.
        with sqlite3.connect(home / "service" / "service.db") as db:
            db.execute("DROP TABLE jobs")
        time.sleep(QUEUE_READ_SECONDS + 0.5)
        broken = httpx.get(
            f"{serve.url}/metrics", headers={"X-Request-ID": BROKEN_QUEUE_ID}, timeout=30
        )
    finally:
        serve.stop()
    yield Observed(
        key=key,
        before=samples(before.text),
        after=samples(scrape.text),
        after_text=scrape.text,
        scrape=scrape,
        broken_scrape=broken,
        echoed=echoed,
        log=serve.log.read_text(encoding="utf-8"),
    )


def secrets_of(observed: Observed) -> list[str]:
    """Strings that must never appear in a metric or a log line."""
    key_id = observed.key.split("_")[1]
    return [observed.key, key_id, KB, FILENAME, "walrus", DOCUMENT_MARKER, QUERY_MARKER]


def test_requests_are_counted_by_route_template_and_status(observed: Observed) -> None:
    after, before = observed.after, observed.before
    requests = "archivist_http_requests_total"
    search = "/v1/knowledge-bases/{name}/search"

    def delta(method: str, route: str, status: str) -> float:
        labels = {"method": method, "route": route, "status": status}
        return value(after, requests, **labels) - value(before, requests, **labels)

    assert delta("POST", "/v1/knowledge-bases", "201") == 1
    assert delta("POST", "/v1/knowledge-bases/{name}/documents", "202") == 1
    assert delta("POST", search, "200") == 1
    # answered before routing (no key; a body over the limit): still the route's template
    assert delta("GET", "/v1/knowledge-bases/{name}/documents", "401") == 1
    assert delta("POST", search, "413") == 1
    assert delta("GET", "/metrics", "200") == 1
    assert delta("GET", "/healthz", "200") == 1  # with a key in its query string
    assert delta("OTHER", "unmatched", "404") == 1
    assert delta("GET", "unmatched", "404") == 1
    latency = "archivist_http_request_duration_seconds"
    assert value(after, f"{latency}_count", method="POST", route=search) == 2
    assert value(after, f"{latency}_sum", method="POST", route=search) > 0
    assert value(after, f"{latency}_bucket", method="POST", route=search, le="+Inf") == 2
    assert value(after, "archivist_http_requests_in_progress") == 1  # the scrape itself


def test_indexing_embedding_and_queue_are_measured(observed: Observed) -> None:
    after = observed.after
    assert value(after, "archivist_index_jobs_finished_total", status="ready") == 1
    assert value(after, "archivist_index_jobs_finished_total", status="failed") == 0
    assert value(after, "archivist_index_document_duration_seconds_count", status="ready") == 1
    assert value(after, "archivist_index_document_duration_seconds_sum", status="ready") > 0
    embed = "archivist_embedding_duration_seconds_count"
    assert value(after, embed, input_type="document") >= 1
    assert value(after, embed, input_type="query") == 1
    assert (("archivist_index_jobs", (("state", "queued"),))) in after
    assert value(after, "archivist_index_jobs", state="queued") == 0
    assert value(after, "archivist_index_jobs", state="running") == 0
    assert value(after, "archivist_index_in_flight") == 0


def test_no_tenant_data_in_any_metric(observed: Observed) -> None:
    labels = {v for (_, pairs) in observed.after for (_, v) in pairs}
    for secret in secrets_of(observed):
        assert not [v for v in labels if secret in v], secret
        assert secret not in observed.after_text
    assert "acme" not in observed.after_text


def test_metrics_answer_without_a_key_under_the_security_headers(observed: Observed) -> None:
    scrape = observed.scrape
    assert scrape.headers["content-type"].startswith("text/plain; version=")
    assert scrape.headers["x-content-type-options"] == "nosniff"
    assert scrape.headers["x-frame-options"] == "DENY"
    assert re.fullmatch(r"[0-9a-f]{32}", scrape.headers["x-request-id"])


def test_an_unreadable_queue_leaves_the_rest_of_the_metrics(observed: Observed) -> None:
    assert observed.broken_scrape.status_code == 200
    broken = samples(observed.broken_scrape.text)
    assert not [name for name, _ in broken if name == "archivist_index_jobs"]
    assert value(broken, "archivist_index_jobs_finished_total", status="ready") == 1


def records(log: str) -> list[dict[str, Any]]:
    """Every line of the service's output, each of which must be one JSON object."""
    lines = [line for line in log.splitlines() if line.strip()]
    parsed = [json.loads(line) for line in lines]
    assert all(isinstance(record, dict) for record in parsed)
    return parsed


def test_every_log_line_is_json_with_no_key_or_text(observed: Observed) -> None:
    parsed = records(observed.log)
    assert {"time", "level", "logger", "message"} <= set(parsed[0])
    for secret in secrets_of(observed):
        assert secret not in observed.log, secret


def test_requests_are_logged_with_their_echoed_ids(observed: Observed) -> None:
    access = [r for r in records(observed.log) if r["logger"] == "archivist.access"]
    assert observed.echoed["search"] == SEARCH_ID
    assert observed.echoed["create"] == CREATE_ID
    (search,) = [r for r in access if r.get("request_id") == SEARCH_ID]
    assert search["method"] == "POST" and search["status"] == 200
    assert search["route"] == "/v1/knowledge-bases/{name}/search"
    assert search["duration_ms"] > 0
    (create,) = [r for r in access if r.get("request_id") == CREATE_ID]
    assert create["route"] == "/v1/knowledge-bases" and create["status"] == 201
    upload_id = observed.echoed["upload"]  # none was sent: one was made up and echoed
    assert re.fullmatch(r"[0-9a-f]{32}", upload_id)
    assert [r["status"] for r in access if r.get("request_id") == upload_id] == [202]
    ids = [r.get("request_id") for r in access]
    assert len(ids) == len(set(ids)) and None not in ids


def test_an_unsafe_incoming_id_is_replaced(observed: Observed) -> None:
    replaced = observed.echoed["hostile"]
    assert re.fullmatch(r"[0-9a-f]{32}", replaced)
    assert "evil" not in observed.log
    (refused,) = [r for r in records(observed.log) if r.get("request_id") == replaced]
    assert refused["status"] == 401


def test_a_requests_own_records_carry_its_id_and_background_ones_none(
    observed: Observed,
) -> None:
    parsed = records(observed.log)
    warning = [r for r in parsed if r["logger"] == "archivist.service.indexing.queue_metrics"]
    assert warning and {r.get("request_id") for r in warning} == {BROKEN_QUEUE_ID}
    assert warning[0]["level"] == "warning" and "jobs" in warning[0]["exception"]
    background = [r for r in parsed if r["logger"] == "archivist.service.indexing.indexer"]
    assert background  # the workers could not claim jobs from the dropped table
    assert all("request_id" not in r for r in background)


@pytest.mark.parametrize(
    ("incoming", "kept"),
    [
        ("0af7651916cd43dd8448eb211c80319c", True),
        ("req-1.2:3_x", True),
        ("a" * 128, True),
        ("a" * 129, False),
        ("", False),
        ("-leading-dash", False),
        ("has space", False),
        ('quote"d', False),
        ("new\nline", False),
        ("ключ", False),
        (None, False),
    ],
)
def test_request_ids_are_bounded_and_safe(incoming: str | None, kept: bool) -> None:
    found = request_id_for(incoming)
    assert (found == incoming) is kept
    if not kept:
        assert re.fullmatch(r"[0-9a-f]{32}", found)


def test_metrics_can_be_turned_off(tmp_path: Path) -> None:
    serve = ServeProcess(tmp_path, free_port(), "--no-metrics")
    serve.start()
    try:
        response = httpx.get(f"{serve.url}/metrics", timeout=30)
        assert response.status_code == 404
        assert "archivist_" not in response.text
        health = httpx.get(f"{serve.url}/healthz", timeout=30)
        assert health.status_code == 200 and health.headers["x-request-id"]
    finally:
        serve.stop()


@pytest.mark.heavy
def test_a_worker_serves_its_indexing_metrics(tmp_path: Path) -> None:
    """`archivist worker --metrics-port` beside an API-only replica: the worker's own
    registry counts the document it indexed; both report the shared queue."""
    with pgvector_server() as server:
        url = fresh_database(server, "observed")
        shared = ("--database", url, "--pgvector-url", url, "--files-url", str(tmp_path / "files"))
        (tmp_path / "api").mkdir()
        key = new_key(ServiceSettings(home=tmp_path / "api", database_url=url), "acme")
        api = ServeProcess(tmp_path / "api", free_port(), *shared, "--workers", "0")
        port = free_port()
        worker_home = tmp_path / "worker"
        worker_home.mkdir()
        log = worker_home / "worker.log"
        exe = [sys.executable, "-m", "archivist", "worker", *shared, "--workers", "1"]
        options = ["--metrics-port", str(port), "--log-format", "json"]
        env = {**os.environ, "ARCHIVIST_HOME": str(worker_home)}
        api.start()
        with open(log, "wb") as out:
            worker = subprocess.Popen([*exe, *options], env=env, stdout=out, stderr=out)
        try:
            scrape = wait_for_metrics(f"http://127.0.0.1:{port}/metrics", worker, log)
            assert value(samples(scrape), "archivist_index_jobs", state="queued") == 0
            with client(api.url, key) as http:
                assert http.post("/v1/knowledge-bases", json={"name": KB}).status_code == 201
                text = f"The {DOCUMENT_MARKER} ledger lists the harvest.\n".encode()
                response = http.post(
                    f"/v1/knowledge-bases/{KB}/documents",
                    files=[("files", (FILENAME, text, "text/plain"))],
                )
                assert response.status_code == 202, response.text
                (document,) = wait_final(http, KB)
                assert document["status"] == "ready", document
            found = samples(wait_for_metrics(f"http://127.0.0.1:{port}/metrics", worker, log))
            assert value(found, "archivist_index_jobs_finished_total", status="ready") == 1
            embed = "archivist_embedding_duration_seconds_count"
            assert value(found, embed, input_type="document") >= 1
            api_side = samples(httpx.get(f"{api.url}/metrics", timeout=30).text)
            assert value(api_side, "archivist_index_jobs_finished_total", status="ready") == 0
            assert ("archivist_index_jobs", (("state", "queued"),)) in api_side
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(60)
            api.stop()
    output = log.read_text(encoding="utf-8")
    parsed = records(output)
    assert any("archivist worker" in r["message"] for r in parsed)
    for secret in (key, KB, FILENAME, DOCUMENT_MARKER):
        assert secret not in output


def wait_for_metrics(
    url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 120
) -> str:
    """The text of `url` once it answers, while `process` (its output in `log`) runs."""

    def scrape() -> str:
        try:
            response = httpx.get(url, timeout=5)
        except httpx.HTTPError:
            return ""
        return response.text if response.status_code == 200 else ""

    return wait_ready(process, "archivist worker", scrape, log, timeout)


def test_a_worker_names_a_metrics_port_it_cannot_use(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path))
    shared = ["worker", "--pgvector-url", "postgresql://x@127.0.0.1:1/db"]
    assert main([*shared, "--metrics-port", "0"]) == 2
    assert "--metrics-port 0: give a port between 1 and 65535" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main([*shared, "--metrics-port", str(port)]) == 2
    assert f"--metrics-port {port}: cannot listen on 127.0.0.1" in capsys.readouterr().err
