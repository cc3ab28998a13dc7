"""Bad requests get a clear 4xx (never a 500) and hostile file names are neutralised."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from service_helpers import client, wait_final

import archivist.service
from archivist.service.routers.documents import MAX_CHUNK_PAGE
from archivist.validation import KB_NAME_PATTERN, check_kb_name, check_limit

TEXT = b"A short note about archived invoices.\n"


def multipart(parts: list[tuple[bytes, bytes]]) -> tuple[bytes, str]:
    """A multipart body from raw (filename bytes, content) pairs, names unescaped."""
    boundary = uuid.uuid4().hex
    body = b""
    for filename, content in parts:
        body += (
            f"--{boundary}\r\n".encode()
            + b'Content-Disposition: form-data; name="files"; filename="'
            + filename
            + b'"\r\nContent-Type: application/octet-stream\r\n\r\n'
            + content
            + b"\r\n"
        )
    body += f"--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.fixture(scope="module")
def http(service) -> Iterator:
    with client(service.url, service.keys["initech"]) as session:
        assert session.post("/v1/knowledge-bases", json={"name": "inbox"}).status_code == 201
        yield session


def documents(http) -> list[dict]:
    return http.get("/v1/knowledge-bases/inbox/documents").json()["items"]


def test_upload_over_the_limit_is_413_and_stores_nothing(http, service) -> None:
    limit = service.settings.max_upload_bytes
    before = documents(http)
    big = b"x" * (limit + 200_000)
    response = http.post(
        "/v1/knowledge-bases/inbox/documents", files={"files": ("big.txt", big, "text/plain")}
    )
    assert response.status_code == 413
    assert str(limit) in response.json()["detail"]
    assert documents(http) == before


def test_chunked_upload_over_the_limit_is_413_too(http, service) -> None:
    limit = service.settings.max_upload_bytes
    body, content_type = multipart([(b"a.txt", TEXT), (b"b.txt", b"y" * limit)])

    def stream() -> Iterator[bytes]:  # no Content-Length: the size is found while copying
        for start in range(0, len(body), 65536):
            yield body[start : start + 65536]

    before = documents(http)
    response = http.post(
        "/v1/knowledge-bases/inbox/documents",
        content=stream(),
        headers={"Content-Type": content_type},
    )
    assert response.status_code == 413, response.text
    assert "b.txt" in response.json()["detail"]
    assert documents(http) == before  # a.txt was accepted by nobody either


def test_unsupported_type_is_415_listing_supported_ones(http) -> None:
    response = http.post(
        "/v1/knowledge-bases/inbox/documents",
        files={"files": ("tool.exe", b"MZ\x90\x00\x03binary", "application/octet-stream")},
    )
    assert response.status_code == 415
    detail = response.json()["detail"]
    assert "tool.exe" in detail and ".pdf" in detail and ".txt" in detail


def test_text_that_starts_like_an_image_signature_is_accepted_as_text(http) -> None:
    text = b"BMI-1 Autoantibody as a New Potential Biomarker for Cervical Carcinoma\n" * 4
    assert http.post("/v1/knowledge-bases", json={"name": "signatures"}).status_code == 201
    response = http.post(
        "/v1/knowledge-bases/signatures/documents",
        files={"files": ("bmi1.txt", text, "text/plain")},
    )
    assert response.status_code == 202, response.text


def test_empty_file_is_422_and_refused_alone_beside_others(http) -> None:
    response = http.post(
        "/v1/knowledge-bases/inbox/documents", files={"files": ("empty.txt", b"", "text/plain")}
    )
    assert response.status_code == 422
    assert "empty.txt" in response.json()["detail"] and "empty" in response.json()["detail"]
    response = http.post(
        "/v1/knowledge-bases/inbox/documents",
        files=[
            ("files", ("ok.txt", TEXT, "text/plain")),
            ("files", ("empty.txt", b"", "text/plain")),
        ],
    )
    assert response.status_code == 202
    ok, empty = response.json()["items"]
    assert ok["filename"] == "ok.txt" and ok["status"] == "queued"
    assert empty["status"] == "refused" and empty["error"]["status"] == 422


def test_missing_files_field_is_422(http) -> None:
    response = http.post("/v1/knowledge-bases/inbox/documents", data={"other": "x"})
    assert response.status_code == 422


@pytest.mark.parametrize(
    "body",
    [b"{not json", b'{"name": ', b"[1, 2]", b'{"name": "ok", "extra": 1}', b'{"name": "../x"}'],
)
def test_malformed_json_is_422(http, body: bytes) -> None:
    response = http.post(
        "/v1/knowledge-bases", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422


def test_bad_search_and_paging_are_422(http) -> None:
    search = "/v1/knowledge-bases/inbox/search"
    assert (
        http.post(
            search, content=b"{oops", headers={"Content-Type": "application/json"}
        ).status_code
        == 422
    )
    assert http.post(search, json={"query": ""}).status_code == 422
    assert http.post(search, json={"query": "x", "top_k": 0}).status_code == 422
    assert http.post(search, json={"query": "x", "top_k": "many"}).status_code == 422
    assert http.post(search, json={"top_k": 3}).status_code == 422
    assert http.post(search, json={"query": "anything"}).json() == {"hits": []}
    assert http.get("/v1/knowledge-bases/inbox/documents/nope/chunks").status_code == 404
    uploaded = http.post(
        "/v1/knowledge-bases/inbox/documents", files={"files": ("p.txt", TEXT, "text/plain")}
    ).json()["items"][0]["id"]
    chunks = f"/v1/knowledge-bases/inbox/documents/{uploaded}/chunks"
    assert http.get(chunks, params={"offset": -1}).status_code == 422
    assert http.get(chunks, params={"limit": -1}).status_code == 422
    assert http.get(chunks, params={"limit": "all"}).status_code == 422


def test_chunk_page_limit_is_the_library_rule(http) -> None:
    """The service's page size is `check_limit` with its maximum: the same values pass, and a
    refusal says what the knowledge base and the stores say."""
    uploaded = http.post(
        "/v1/knowledge-bases/inbox/documents", files={"files": ("q.txt", TEXT, "text/plain")}
    ).json()["items"][0]["id"]
    wait_final(http, "inbox", [uploaded])
    chunks = f"/v1/knowledge-bases/inbox/documents/{uploaded}/chunks"
    assert http.get(chunks, params={"limit": 0}).json()["items"] == []
    assert len(http.get(chunks, params={"limit": MAX_CHUNK_PAGE}).json()["items"]) == 1
    for bad in (-1, MAX_CHUNK_PAGE + 1):
        with pytest.raises(ValueError) as refused:
            check_limit(bad, maximum=MAX_CHUNK_PAGE)
        response = http.get(chunks, params={"limit": bad})
        assert response.status_code == 422
        assert str(refused.value) in response.json()["detail"]
    schema = http.get("/openapi.json").json()["paths"][
        "/v1/knowledge-bases/{name}/documents/{document_id}/chunks"
    ]["get"]["parameters"]
    [limit] = [p for p in schema if p["name"] == "limit"]
    assert (limit["schema"]["minimum"], limit["schema"]["maximum"]) == (0, MAX_CHUNK_PAGE)


NAMES = ["kb", "A.b_c-9", "k" * 64, "k" * 65, "-kb", ".kb", "kb\n", "kb/x", "kb x", "", "é"]


def test_kb_names_follow_the_library_rule(http) -> None:
    """The service accepts exactly the names `check_kb_name` (the CLI's rule) accepts."""
    for name in NAMES:
        try:
            check_kb_name(name)
            valid = True
        except ValueError:
            valid = False
        response = http.post("/v1/knowledge-bases", json={"name": name})
        assert (response.status_code == 201) is valid, (name, response.text)
        assert response.status_code in (201, 422)
        if valid:
            assert http.delete(f"/v1/knowledge-bases/{name}").status_code == 204


def test_hostile_filenames_are_neutralised(http, service) -> None:
    body, content_type = multipart(
        [
            (b"../../escape.txt", TEXT + b" 1"),  # each its own content: one document each
            (b"nul\x00byte.txt", TEXT + b" 2"),
            (b"L" * 4096 + b".txt", TEXT + b" 3"),
            (b"/etc/passwd.txt", TEXT + b" 4"),
        ]
    )
    response = http.post(
        "/v1/knowledge-bases/inbox/documents",
        content=body,
        headers={"Content-Type": content_type},
    )
    assert response.status_code == 202, response.text
    names = [item["filename"] for item in response.json()["items"]]
    assert names[0] == "escape.txt"
    assert "\x00" not in names[1] and names[1].endswith(".txt")
    assert names[2].endswith(".txt") and len(names[2].encode()) <= 200
    assert names[3] == "passwd.txt"
    files_dir = service.settings.files_dir.resolve()
    for path in service.settings.home.rglob("*"):
        if path.name in ("escape.txt", "passwd.txt"):
            assert path.resolve().is_relative_to(files_dir)
    assert not (service.settings.home / "escape.txt").exists()
    assert not (service.settings.service_dir / "escape.txt").exists()
    ids = [item["id"] for item in response.json()["items"]]
    docs = wait_final(http, "inbox", ids)
    assert {d["status"] for d in docs} == {"ready"}


def test_the_web_page_checks_kb_names_by_the_library_pattern() -> None:
    """The page's form field carries `KB_NAME_PATTERN` (HTML anchors it and needs '-' escaped)."""
    page = (Path(archivist.service.__file__).parent / "static" / "index.html").read_text()
    [pattern] = re.findall(r'id="kb-name"[^>]*pattern="([^"]+)"', page)
    assert f"^{pattern.replace(chr(92) + '-', '-')}$" == KB_NAME_PATTERN
