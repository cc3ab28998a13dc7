"""An upload of several files keeps its good ones: each refused file gets its own item with
the reason, the rest are queued, indexed and found; only a request whose every file is
refused is an error, naming each file."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from service_helpers import client, wait_final

GOOD_MD = b"# Lighthouses\n\nThe lighthouse keeper lights the lamp at dusk every evening.\n"
BAD_EXE = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff" + bytes(48) + b"DOS mode"
METADATA = (
    b"Metadata-Version: 2.1\nName: harbour-tools\n"
    b"Summary: Tide tables and berth schedules for the harbour master\n"
)
BATCH = [
    ("files", ("good.md", GOOD_MD, "text/markdown")),
    ("files", ("bad.exe", BAD_EXE, "application/octet-stream")),
    ("files", ("METADATA", METADATA, "application/octet-stream")),
]


@pytest.fixture(scope="module")
def http(service) -> Iterator:
    with client(service.url, service.keys["globex"]) as session:
        yield session


def _documents(http, kb: str) -> list[dict]:
    return list(http.get(f"/v1/knowledge-bases/{kb}/documents").json()["items"])


def test_a_batch_queues_its_good_files_and_refuses_the_bad_one_alone(http, service) -> None:
    assert http.post("/v1/knowledge-bases", json={"name": "mixed"}).status_code == 201
    response = http.post("/v1/knowledge-bases/mixed/documents", files=BATCH)
    assert response.status_code == 202, response.text
    good, bad, metadata = response.json()["items"]
    assert (good["filename"], good["status"], good["error"]) == ("good.md", "queued", None)
    assert (metadata["filename"], metadata["status"]) == ("METADATA", "queued")
    assert (bad["filename"], bad["status"], bad["id"]) == ("bad.exe", "refused", None)
    assert bad["error"]["status"] == 415
    assert bad["error"]["detail"].startswith("bad.exe: unsupported file type .exe")
    assert "a Windows executable" in bad["error"]["detail"]

    documents = wait_final(http, "mixed", [good["id"], metadata["id"]])
    assert {d["status"] for d in documents} == {"ready"}, documents
    by_name = {d["filename"]: d for d in _documents(http, "mixed")}
    assert set(by_name) == {"good.md", "METADATA"}  # nothing of bad.exe is kept
    assert by_name["METADATA"]["media_type"] == "text/plain"
    assert not list(service.settings.files_dir.rglob("bad.exe"))
    searches = {"tide tables for the harbour master": "METADATA", "lighthouse keeper": "good.md"}
    for query, found in searches.items():
        hits = http.post("/v1/knowledge-bases/mixed/search", json={"query": query}).json()
        assert hits["hits"][0]["filename"] == found, hits


def test_a_batch_whose_every_file_is_refused_is_an_error_naming_each(http) -> None:
    assert http.post("/v1/knowledge-bases", json={"name": "refused"}).status_code == 201
    response = http.post(
        "/v1/knowledge-bases/refused/documents",
        files=[
            ("files", ("bad.exe", BAD_EXE, "application/octet-stream")),
            ("files", ("empty.txt", b"", "text/plain")),
        ],
    )
    assert response.status_code == 415, response.text
    detail = response.json()["detail"]
    assert "bad.exe: unsupported file type .exe" in detail
    assert "empty.txt: the file is empty" in detail
    exe, empty = response.json()["errors"]  # each file's reason on its own
    assert exe["loc"] == ["files", 0] and exe["msg"].startswith("bad.exe: unsupported")
    assert exe["type"] == "unsupported_file_type"
    assert empty == {"loc": ["files", 1], "msg": "empty.txt: the file is empty", "type": "empty_file"}
    assert _documents(http, "refused") == []
    alone = http.post(
        "/v1/knowledge-bases/refused/documents", files={"files": ("empty.txt", b"", "text/plain")}
    )
    assert alone.status_code == 422 and "empty.txt: the file is empty" in alone.json()["detail"]


def test_a_retried_batch_is_answered_as_the_first_with_its_refusals(http) -> None:
    assert http.post("/v1/knowledge-bases", json={"name": "retried"}).status_code == 201
    key = {"Idempotency-Key": "batch-with-a-refusal"}
    url = "/v1/knowledge-bases/retried/documents"
    first = http.post(url, files=BATCH, headers=key)
    assert first.status_code == 202, first.text
    again = http.post(url, files=BATCH, headers=key)
    assert again.status_code == 202, again.text
    ids = [item["id"] for item in first.json()["items"]]
    assert [item["id"] for item in again.json()["items"]] == ids
    assert [item["status"] for item in again.json()["items"]][1] == "refused"
    assert again.json()["items"][1]["error"] == first.json()["items"][1]["error"]
    assert {d["id"] for d in _documents(http, "retried")} == {ids[0], ids[2]}
    # the key was given to a request with another refused file: a different request
    other = [BATCH[0], ("files", ("other.exe", BAD_EXE + b"!", "application/octet-stream"))]
    assert http.post(url, files=other, headers=key).status_code == 422
