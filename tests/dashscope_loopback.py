"""A loopback HTTP server speaking DashScope's text-embedding API, backed by a real model.

No DashScope account can be used here, so the seed's DashScope samples run against this
stand-in: the real `DashScopeEmbeddingModel` HTTP client talks to it over a socket, and it
answers in DashScope's documented response shape with vectors from the offline model,
zero-padded to the requested dimension (cosine similarity is unchanged by the padding).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from archivist.embedding import EmbeddingModelBase

TEXT_PATH = "/api/v1/services/embeddings/text-embedding/text-embedding"


@contextmanager
def dashscope_loopback(model: EmbeddingModelBase) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve on 127.0.0.1; yields (base_url, recorded request bodies)."""
    requests: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append({"path": self.path, "auth": self.headers["Authorization"], **body})
            if self.path != TEXT_PATH:
                return self._send(404, {"code": "NotFound", "message": self.path})
            texts = body["input"]["texts"]
            dimension = body.get("parameters", {}).get("dimension", 1024)
            input_type = body.get("parameters", {}).get("text_type", "document")
            with lock:
                response = asyncio.run(model(texts, input_type=input_type))
            embeddings = [
                {"text_index": i, "embedding": v + [0.0] * (dimension - len(v))}
                for i, v in enumerate(response.embeddings)
            ]
            self._send(
                200,
                {
                    "output": {"embeddings": embeddings},
                    "usage": {"total_tokens": sum(len(t.split()) for t in texts)},
                    "request_id": f"req-{len(requests)}",
                },
            )

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # shutdown() returns at the loop's next poll: the default 0.5 s would idle every test
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/v1", requests
    finally:
        server.shutdown()
        server.server_close()
