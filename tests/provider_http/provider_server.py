"""A real HTTP/1.1 server on 127.0.0.1 speaking the OpenAI `/embeddings` and
`/chat/completions` wire formats and DashScope's text-embedding API, with scripted failures.

It counts the TCP connections it accepts and the ones that have closed, so tests can check
that a client reuses one connection and closes it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DASHSCOPE_TEXT_PATH = "/api/v1/services/embeddings/text-embedding/text-embedding"


@dataclass
class Scripted:
    """One queued answer: served instead of the normal one to the next request."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class ProviderServer(ThreadingHTTPServer):
    """Serves on an ephemeral port; `replies` are served first, then normal answers."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.replies: list[Scripted] = []
        self.paths: list[str] = []
        self.accepted = 0
        self.closed = 0
        self.all_closed = threading.Condition(self.lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.lock:
            self.accepted += 1
        super().process_request(request, client_address)

    def connection_closed(self) -> None:
        with self.lock:
            self.closed += 1
            self.all_closed.notify_all()

    def wait_until_closed(self, count: int | None = None, timeout: float = 10.0) -> bool:
        """Whether `count` connections (default: every accepted one) have been closed by the
        client; waits a while, as a handler thread notices a close only when it reads it."""
        with self.lock:
            return self.all_closed.wait_for(
                lambda: self.closed >= (self.accepted if count is None else count), timeout
            )

    def open_connections(self) -> int:
        with self.lock:
            return self.accepted - self.closed

    def next_reply(self, path: str) -> Scripted | None:
        with self.lock:
            self.paths.append(path)
            return self.replies.pop(0) if self.replies else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: one connection may carry many requests
    server: ProviderServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        scripted = self.server.next_reply(self.path)
        if scripted is not None:
            self._send(scripted.status, json.dumps(scripted.body).encode(), scripted.headers)
        elif self.path == "/v1/embeddings":
            data = [
                {"object": "embedding", "index": i, "embedding": _vector(text)}
                for i, text in enumerate(body["input"])
            ]
            self._send_json({"object": "list", "data": data, "usage": {"prompt_tokens": 1}})
        elif self.path == DASHSCOPE_TEXT_PATH:
            entries = [
                {"text_index": i, "embedding": _vector(text)}
                for i, text in enumerate(body["input"]["texts"])
            ]
            self._send_json({"output": {"embeddings": entries}, "usage": {"total_tokens": 1}})
        elif self.path == "/v1/chat/completions" and body.get("stream"):
            chunk = {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": None}]}
            end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            events = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(end)}\n\ndata: [DONE]\n\n"
            self._send(200, events.encode(), {"Content-Type": "text/event-stream"})
        elif self.path == "/v1/chat/completions":
            message = {"role": "assistant", "content": "ok"}
            self._send_json(
                {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
            )
        else:
            self._send_json({"error": {"message": f"no such path {self.path}"}}, 404)

    def _send_json(self, payload: Any, status: int = 200) -> None:
        self._send(status, json.dumps(payload).encode(), {})

    def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        headers = {"Content-Type": "application/json", **headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.connection_closed()

    def log_message(self, *args: object) -> None:
        return


def _vector(text: str) -> list[float]:
    return [float(len(text)), 1.0, 0.5, 0.25]


@contextmanager
def provider_server() -> Iterator[ProviderServer]:
    """A running `ProviderServer`, shut down afterwards."""
    server = ProviderServer()
    # shutdown() returns at the loop's next poll: the default 0.5 s would idle every test
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
