"""Fairness against a real service: per-tenant quotas, a per-key request rate, and jobs
taken fairly across tenants (one worker, so the order is visible)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from service_helpers import client, new_key, running_service, wait_final

from archivist.service import ServiceSettings
from archivist.service.quota import Quota

BACKLOG = 60


@dataclass
class Fair:
    url: str
    keys: dict[str, str]


@pytest.fixture(scope="module")
def fair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fair]:
    home: Path = tmp_path_factory.mktemp("fair-home")
    settings = ServiceSettings(
        home=home,
        workers=1,
        quota=Quota(knowledge_bases=1, documents=2, storage_bytes=200),
        tenant_quotas={"bulk": Quota(documents=1000)},
        rate_per_second=2,
        rate_burst=400,
    )
    keys = {t: new_key(settings, t) for t in ("small", "bulk", "single", "chatty")}
    with running_service(settings) as url:
        yield Fair(url, keys)


def test_quotas_refuse_what_would_cross_them_and_store_nothing(fair) -> None:
    with client(fair.url, fair.keys["small"]) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "one"}).status_code == 201
        second = http.post("/v1/knowledge-bases", json={"name": "two"})
        assert second.status_code == 403
        assert second.headers["content-type"] == "application/problem+json"
        assert "knowledge bases" in second.json()["detail"] and "1" in second.json()["detail"]
        big = http.post(
            "/v1/knowledge-bases/one/documents", files={"files": ("big.txt", b"x" * 300)}
        )
        assert big.status_code == 403 and "200" in big.json()["detail"]
        files = [("files", (f"n{n}.txt", f"note {n}\n".encode())) for n in range(3)]
        many = http.post("/v1/knowledge-bases/one/documents", files=files)
        assert many.status_code == 403 and "documents" in many.json()["detail"]
        assert http.get("/v1/knowledge-bases/one/documents").json()["items"] == []
        fits = http.post("/v1/knowledge-bases/one/documents", files=files[:2])
        assert fits.status_code == 202


def test_a_key_over_its_rate_gets_429_with_retry_after(fair) -> None:
    with client(fair.url, fair.keys["chatty"]) as http:
        codes = [http.get("/v1/knowledge-bases").status_code for _ in range(450)]
        assert codes[:300] == [200] * 300 and 429 in codes
        limited = http.get("/v1/knowledge-bases")
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) >= 1
        assert limited.headers["content-type"] == "application/problem+json"
    with client(fair.url, fair.keys["single"]) as other:  # another key is not affected
        assert other.get("/v1/knowledge-bases").status_code == 200


def test_one_file_is_not_stuck_behind_another_tenants_backlog(fair) -> None:
    with client(fair.url, fair.keys["bulk"]) as bulk, client(fair.url, fair.keys["single"]) as one:
        assert bulk.post("/v1/knowledge-bases", json={"name": "pile"}).status_code == 201
        assert one.post("/v1/knowledge-bases", json={"name": "solo"}).status_code == 201
        files = [
            ("files", (f"memo-{n}.txt", f"Memo {n}: the archive moved to room {n}.\n".encode()))
            for n in range(BACKLOG)
        ]
        assert bulk.post("/v1/knowledge-bases/pile/documents", files=files).status_code == 202
        time.sleep(0.5)  # the backlog is being worked on
        upload = one.post(
            "/v1/knowledge-bases/solo/documents",
            files={"files": ("urgent.txt", b"Urgent: the auditors arrive on Monday.\n")},
        )
        assert upload.status_code == 202
        [single] = wait_final(one, "solo", timeout=120)
        pile = wait_final(bulk, "pile", timeout=300)
        queued, indexed = single["created_at"], single["updated_at"]
        assert any(d["updated_at"] > indexed for d in pile), "no backlog left to overtake"
        # One worker taking turns across tenants: at most the job in hand and one more of the
        # backlog finish between the file's arrival and its indexing.
        overtaking = [d["filename"] for d in pile if queued < d["updated_at"] < indexed]
        assert len(overtaking) <= 2, f"{overtaking} ran before the single file"


def test_serve_reports_a_bad_quotas_file_without_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "quotas.json"
    bad.write_text('{"tenants": {"acme": {"documents": -1}}}')
    exe = Path(sys.executable).parent / "archivist"
    result = subprocess.run(
        [str(exe), "serve", "--port", "1", "--quotas", str(bad)],
        capture_output=True,
        text=True,
        env={**os.environ, "ARCHIVIST_HOME": str(tmp_path)},
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "tenant_quotas.acme.documents" in result.stderr and "Traceback" not in result.stderr
