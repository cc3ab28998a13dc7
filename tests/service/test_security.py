"""Security of `archivist serve` against a real server on loopback: headers, error shape,
authentication before the body, byte-counted limits, hostile names and types."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import tempfile
import time
from collections.abc import Iterator

import pytest
from service_helpers import client, wait_final

PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def http(service) -> Iterator:
    with client(service.url, service.keys["acme"]) as session:
        assert session.post("/v1/knowledge-bases", json={"name": "secure"}).status_code == 201
        yield session


def assert_problem(response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["status"] == status and body["title"] and body["type"] == "about:blank"
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def test_every_response_carries_the_security_headers(http, service) -> None:
    upload = http.post(
        "/v1/knowledge-bases/secure/documents",
        files={"files": ("page.html", b"<html><body><p>Hello there</p></body></html>")},
    )
    assert upload.status_code == 202
    doc = upload.json()["items"][0]["id"]
    wait_final(http, "secure", [doc])
    responses = {
        "page": http.get("/"),
        "script": http.get("/static/app.js"),
        "api": http.get("/v1/knowledge-bases"),
        "401": http.get("/v1/knowledge-bases", headers={"Authorization": "Bearer nope"}),
        "404": http.get("/v1/knowledge-bases/nothing/documents"),
        "download": http.get(f"/v1/knowledge-bases/secure/documents/{doc}/file"),
    }
    for name, response in responses.items():
        headers = response.headers
        assert headers["x-content-type-options"] == "nosniff", name
        assert headers["referrer-policy"] == "no-referrer", name
        assert "frame-ancestors 'none'" in headers["content-security-policy"], name
    page_csp = responses["page"].headers["content-security-policy"]
    assert "script-src 'self'" in page_csp and "unsafe-inline" not in page_csp
    download = responses["download"].headers
    assert download["content-disposition"].startswith("attachment;")
    assert download["content-security-policy"].startswith("sandbox")


def test_errors_are_problem_json(http) -> None:
    assert_problem(http.get("/v1/knowledge-bases/missing/documents"), 404)
    body = assert_problem(http.post("/v1/knowledge-bases", json={"name": "bad name!"}), 422)
    assert body["errors"][0]["loc"] == ["body", "name"]
    assert_problem(http.post("/v1/knowledge-bases", json={"name": "secure"}), 409)
    bare = client(http.base_url.__str__())
    assert_problem(bare.get("/v1/knowledge-bases"), 401)


def raw_request(url: str, head: str) -> socket.socket:
    """A socket to the service with `head` (request line and headers) already sent."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(head.encode("latin-1") + b"\r\n")
    return sock


def stream_until_answer(sock: socket.socket, total: int, piece: int = 65536) -> tuple[bytes, int]:
    """Send up to `total` bytes as chunks, watching for an early answer; (answer, bytes sent)."""
    sent = 0
    chunk = f"{piece:x}\r\n".encode() + b"y" * piece + b"\r\n"
    sock.setblocking(False)
    answer = b""
    deadline = time.monotonic() + 60
    while sent < total and time.monotonic() < deadline:
        readable, writable, _ = select.select([sock], [sock], [], 1)
        if readable:
            with contextlib.suppress(ConnectionError):
                answer = sock.recv(65536)
            break
        if writable:
            try:
                sock.send(chunk)
            except (BlockingIOError, ConnectionError):
                continue
            sent += piece
    sock.setblocking(True)
    sock.settimeout(20)
    with contextlib.suppress(ConnectionError, TimeoutError):
        while more := sock.recv(65536):  # the rest of the answer, until the server closes
            answer += more
    return answer, sent


def temp_files_open() -> int:
    """Open files of this process (the service runs in it) in the temp directory."""
    tmp = tempfile.gettempdir()
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}").startswith(tmp + "/#"):
                count += 1
    return count


@pytest.mark.parametrize("path", ["/v1/knowledge-bases/secure/documents", "/v1/knowledge-bases"])
def test_no_key_is_401_from_the_headers_before_any_body(service, path) -> None:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        "Content-Type: multipart/form-data; boundary=zz\r\n"
    )
    for auth in ("", "Authorization: Bearer ak_wrong\r\n"):
        with raw_request(service.url, head + auth) as sock:  # not one body byte sent
            sock.settimeout(10)
            answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
        assert b"application/problem+json" in answer and b"connection: close" in answer.lower()


def test_malformed_json_without_a_key_is_401_not_422(service) -> None:
    with client(service.url) as bare:
        response = bare.post(
            "/v1/knowledge-bases",
            content=b"{not json",
            headers={"Content-Type": "application/json"},
        )
    assert_problem(response, 401)


def test_chunked_json_body_is_cut_off_at_the_json_limit(service, http) -> None:
    limit = service.settings.max_json_bytes
    head = (
        "POST /v1/knowledge-bases/secure/search HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {service.keys['acme']}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
    )
    with raw_request(service.url, head) as sock:
        answer, sent = stream_until_answer(sock, 200 * 1024 * 1024)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert str(limit).encode() in answer
    assert sent < 200 * 1024 * 1024 // 4  # answered long before the 200 MB were sent


def test_chunked_upload_over_the_limit_stops_early_and_leaves_no_temp_file(service, http) -> None:
    before = http.get("/v1/knowledge-bases/secure/documents").json()["items"]
    open_before = temp_files_open()
    limit = service.settings.max_upload_bytes
    boundary = "b0undary"
    head = (
        "POST /v1/knowledge-bases/secure/documents HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {service.keys['acme']}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
        "Transfer-Encoding: chunked\r\n"
    )
    part = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="big.txt"'
        "\r\nContent-Type: text/plain\r\n\r\n"
    ).encode()
    with raw_request(service.url, head) as sock:
        sock.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
        answer, sent = stream_until_answer(sock, 300 * 1024 * 1024)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert sent < 100 * 1024 * 1024 and sent >= limit
    time.sleep(0.5)
    assert temp_files_open() <= open_before
    assert http.get("/v1/knowledge-bases/secure/documents").json()["items"] == before


def test_lone_surrogates_and_huge_offsets_are_422_not_500(http) -> None:
    raw = b'{"query": "\\ud800 invoices"}'
    headers = {"Content-Type": "application/json"}
    for path in ("/v1/knowledge-bases/secure/search", "/v1/knowledge-bases"):
        body = assert_problem(http.post(path, content=raw, headers=headers), 422)
        assert body["errors"]
    doc = http.get("/v1/knowledge-bases/secure/documents").json()["items"][0]["id"]
    chunks = f"/v1/knowledge-bases/secure/documents/{doc}/chunks"
    body = assert_problem(http.get(chunks, params={"offset": "9" * 23}), 422)
    assert body["errors"][0]["loc"] == ["query", "offset"]
    assert http.get(chunks, params={"offset": 2**31 - 1}).json()["items"] == []


def upload(http, name: str, data: bytes):
    return http.post("/v1/knowledge-bases/secure/documents", files={"files": (name, data)})


def test_bidi_and_invisible_characters_are_stripped_from_filenames(http) -> None:
    response = upload(http, "invoice\u202egpj.txt\u200b", b"An invoice, not a picture.\n")
    assert response.status_code == 202
    assert response.json()["items"][0]["filename"] == "invoicegpj.txt"


def test_the_extension_decides_and_the_content_must_match(http, service) -> None:
    before = {d["id"] for d in http.get("/v1/knowledge-bases/secure/documents").json()["items"]}
    body = assert_problem(upload(http, "bad.exe", b"MZ\x90\x00\x03" + b"\x00" * 64), 415)
    assert "bad.exe" in body["detail"] and ".txt" in body["detail"]
    body = assert_problem(upload(http, "report.pdf", b"not a PDF at all\n"), 415)
    assert "report.pdf" in body["detail"] and "does not match" in body["detail"]
    body = assert_problem(upload(http, "notes.txt", b"MZ\x90\x00\x03" + b"\x00" * 64), 415)
    assert "executable" in body["detail"]
    reads_images = service.settings.ocr_reader() is not None  # with OCR images are offered
    body = assert_problem(upload(http, "scan.png", b"plain ASCII text\n"), 415)
    assert "scan.png" in body["detail"]
    offered = http.get("/v1/supported-types").json()["extensions"]
    assert ".txt" in offered and ".pdf" in offered and (".png" in offered) == reads_images
    after = {d["id"] for d in http.get("/v1/knowledge-bases/secure/documents").json()["items"]}
    assert after == before


def test_database_and_uploads_are_private_to_the_service_user(http, service) -> None:
    response = upload(http, "private.txt", b"Salaries of the board.\n")
    assert response.status_code == 202
    service_dir = service.settings.service_dir
    assert (service_dir / "service.db").stat().st_mode & 0o777 == 0o600
    for directory in (service_dir, service.settings.files_dir):
        assert directory.stat().st_mode & 0o777 == 0o700
    stored = list(service.settings.files_dir.rglob("private.txt"))
    assert stored and all(p.stat().st_mode & 0o777 == 0o600 for p in stored)
    assert all(p.parent.stat().st_mode & 0o777 == 0o700 for p in stored)
