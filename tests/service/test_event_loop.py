"""Document work never runs on the event loop: the service keeps answering while the
worst small file (one 2 MB CSV line, which once stalled `/healthz` for 22 s) indexes."""

from __future__ import annotations

import time

import pytest
from service_helpers import client

ONE_LINE_CSV = b"b," * 1_000_000 + b"\n"


@pytest.mark.heavy
def test_healthz_stays_responsive_while_a_one_line_csv_indexes(service) -> None:
    assert len(ONE_LINE_CSV) < service.settings.max_upload_bytes
    with client(service.url, service.keys["globex"]) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "csv"}).status_code == 201
        upload = http.post(
            "/v1/knowledge-bases/csv/documents", files={"files": ("l.csv", ONE_LINE_CSV)}
        )
        assert upload.status_code == 202
        doc = upload.json()["items"][0]["id"]
        slowest, polls, status = 0.0, 0, "queued"
        deadline = time.monotonic() + 300
        while status not in ("ready", "failed") and time.monotonic() < deadline:
            started = time.monotonic()
            assert http.get("/healthz").status_code == 200
            slowest = max(slowest, time.monotonic() - started)
            polls += 1
            status = http.get(f"/v1/knowledge-bases/csv/documents/{doc}").json()["status"]
            time.sleep(0.05)
        assert status == "ready", status
        assert polls >= 5  # it was measured while the file was being worked on
        assert slowest < 2.0, f"/healthz took {slowest:.1f} s while the CSV indexed"
