"""Slow clients cannot hold the service: headers, bodies and idle keep-alive connections
are timed out (bounded slow sockets on loopback, against a real server)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from service_helpers import new_key, running_service

from archivist.service import ServiceSettings

LIMIT = 1.0


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    home: Path = tmp_path_factory.mktemp("slow-home")
    settings = ServiceSettings(
        home=home,
        header_timeout_seconds=LIMIT,
        body_idle_seconds=LIMIT,
        body_timeout_seconds=3 * LIMIT,
        keep_alive_seconds=LIMIT,
    )
    key = new_key(settings, "patient")
    with running_service(settings) as url:
        yield url, key


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def closed_after(sock: socket.socket, limit: float) -> tuple[bool, bytes]:
    """Whether the server closes `sock` within `limit` s, and what it sent before."""
    sock.settimeout(limit)
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except TimeoutError:
        return False, received
    except ConnectionError:
        pass
    return True, received


def test_connections_that_never_finish_their_headers_are_closed(quick) -> None:
    url, _ = quick
    socks = [connect(url) for _ in range(20)]
    try:
        for n, sock in enumerate(socks):  # half send nothing, half a trickle of headers
            if n % 2:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200  # still served
        for sock in socks:
            closed, received = closed_after(sock, LIMIT + 5)
            assert closed
            assert received == b"" or received.startswith(b"HTTP/1.1 408")
        assert time.monotonic() - started < LIMIT + 5
    finally:
        for sock in socks:
            sock.close()


def test_a_body_that_stalls_is_answered_408(quick) -> None:
    url, key = quick
    with connect(url) as sock:
        sock.sendall(
            b"POST /v1/knowledge-bases HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {key}\r\n".encode()
            + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
            + b'{"name": "slo'
        )
        closed, received = closed_after(sock, LIMIT + 5)
    assert closed
    assert received.startswith(b"HTTP/1.1 408"), received[:200]
    assert b"application/problem+json" in received


def test_a_body_trickled_forever_hits_the_total_limit(quick) -> None:
    url, key = quick
    with connect(url) as sock:
        sock.sendall(
            b"POST /v1/knowledge-bases HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {key}\r\n".encode()
            + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        started = time.monotonic()
        sock.settimeout(0.01)
        received = b""
        while time.monotonic() - started < 3 * LIMIT + 5:
            try:
                sock.sendall(b"1\r\n \r\n")  # one byte every half second: never idle
            except ConnectionError:
                break
            try:
                received += sock.recv(4096)
                break
            except TimeoutError:
                time.sleep(LIMIT / 2)
        elapsed = time.monotonic() - started
    assert received.startswith(b"HTTP/1.1 408"), received[:200]
    assert elapsed < 3 * LIMIT + 3


def test_idle_keep_alive_connections_are_closed(quick) -> None:
    url, _ = quick
    with connect(url) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        closed, received = closed_after(sock, LIMIT + 5)
    assert received.startswith(b"HTTP/1.1 200")
    assert closed


def _exchange(url: str, raw: bytes) -> tuple[bool, bytes]:
    """Send `raw` on a new connection; whether the server closed it, and what it answered."""
    sock = connect(url)
    try:
        sock.sendall(raw)
        return closed_after(sock, 10)
    finally:
        sock.close()


def test_a_request_with_both_transfer_encoding_and_content_length_is_refused(quick) -> None:
    """A body length two parsers could read differently: 400, and the connection closed, so
    the bytes after the first body never run as a second (smuggled) request."""
    url, key = quick
    smuggled = b"GET /v1/knowledge-bases HTTP/1.1\r\nHost: x\r\n\r\n"
    raw = (
        b"POST /v1/knowledge-bases HTTP/1.1\r\nHost: x\r\n"
        + f"Authorization: Bearer {key}\r\n".encode()
        + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        + b"Content-Length: 4\r\n\r\n0\r\n\r\n"
        + smuggled
    )
    closed, received = _exchange(url, raw)
    assert closed
    assert received.startswith(b"HTTP/1.1 400")
    assert received.count(b"HTTP/1.1 ") == 1  # nothing answered the smuggled request
    assert b"both Transfer-Encoding and Content-Length" in received
    assert b"application/problem+json" in received and b"x-frame-options: DENY" in received


def test_a_folded_header_is_refused_with_a_problem_and_security_headers(quick) -> None:
    url, key = quick
    raw = (
        b"GET /v1/knowledge-bases HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer\r\n "
        + key.encode()
        + b"\r\n\r\n"
    )
    closed, received = _exchange(url, raw)
    assert closed
    assert received.startswith(b"HTTP/1.1 400")
    head, _, body = received.partition(b"\r\n\r\n")
    assert b"content-type: application/problem+json" in head
    assert b"x-content-type-options: nosniff" in head
    assert b"folded" in body


@pytest.mark.parametrize(
    "raw",
    [
        b"GARBAGE\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n",
        b"POST /v1/knowledge-bases HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"zz\r\nab\r\n0\r\n\r\n",
    ],
    ids=["request line", "header name", "chunk size"],
)
def test_what_the_parser_refuses_is_a_problem_with_security_headers(quick, raw: bytes) -> None:
    url, _ = quick
    closed, received = _exchange(url, raw)
    assert closed
    assert received.startswith(b"HTTP/1.1 400")
    assert received.count(b"HTTP/1.1 ") == 1
    head, _, body = received.partition(b"\r\n\r\n")
    assert b"content-type: application/problem+json" in head
    assert b"content-security-policy: " in head and b"x-frame-options: DENY" in head
    assert b"not valid HTTP/1.1" in body


def test_ordinary_requests_on_one_connection_still_work(quick) -> None:
    url, key = quick
    one = f"GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\r\n".encode()
    sock = connect(url)
    try:
        for _ in range(3):  # keep-alive: each request's headers are checked anew
            sock.sendall(one)
            sock.settimeout(5)
            answer = sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    finally:
        sock.close()
