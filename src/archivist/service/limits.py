"""An ASGI middleware that answers 413 before reading a body its Content-Length says is too big."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

MULTIPART_OVERHEAD = 64 * 1024
"""Room for multipart boundaries and part headers on top of the files themselves."""


class UploadSizeLimit:
    """Refuse POST bodies over `max_bytes` + overhead by their declared length."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            for name, value in scope["headers"]:
                if name == b"content-length" and value.isdigit():
                    if int(value) > self.max_bytes + MULTIPART_OVERHEAD:
                        await _too_large(send, self.max_bytes)
                        return
                    break
        await self.app(scope, receive, send)


async def _too_large(send: Send, max_bytes: int) -> None:
    body = json.dumps(
        {"detail": f"the request is larger than the upload limit of {max_bytes} bytes"}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
