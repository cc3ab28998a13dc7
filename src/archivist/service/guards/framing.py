"""Requests whose framing two HTTP parsers could read differently are refused.

A request carrying both `Transfer-Encoding` and `Content-Length` (RFC 9112 6.1: a sender must
not; a proxy that trusts the other header sees a different body end, and the rest of the body
as a second, smuggled request) is answered 400 and its connection closed, before any layer
reads a byte of its body. Obsolete line folding in headers is refused by the service's HTTP
protocol (`slow_clients.timed_protocol`), which sees the raw header block.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from archivist.service.problems import send_problem

AMBIGUOUS_LENGTH = "the request has both Transfer-Encoding and Content-Length"


class RequestFraming:
    """Answers 400 (and closes the connection) to a request with an ambiguous body length."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            names = {name.lower() for name, _ in scope["headers"]}
            if b"transfer-encoding" in names and b"content-length" in names:
                await send_problem(send, 400, AMBIGUOUS_LENGTH, scope=scope)
                return
        await self.app(scope, receive, send)
