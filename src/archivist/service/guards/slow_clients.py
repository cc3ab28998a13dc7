"""Time limits on slow clients: headers, bodies and idle keep-alive connections.

uvicorn bounds idle keep-alive connections but not a request whose headers trickle in
(or never come): `timed_protocol` adds that limit to its HTTP/1.1 protocol, and
`BodyTimeout` bounds the wait for each piece of a body and for the whole body, answering
408. A reverse proxy in front should still buffer requests and set its own limits.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import h11
from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from archivist.service.guards.security_headers import SECURITY_HEADERS
from archivist.service.problems import problem_body, title_of
from archivist.service.settings import ServiceSettings

_HEAD_LIMIT = 64 * 1024


def raw_problem(status: int, detail: str) -> bytes:
    """A whole HTTP/1.1 problem response with the security headers, closing the connection,
    for answers the protocol writes before any ASGI layer runs."""
    body = problem_body(status, detail)
    head = [
        b"HTTP/1.1 %d %s" % (status, title_of(status).encode()),
        b"content-type: application/problem+json",
        b"content-length: %d" % len(body),
        b"connection: close",
        *(name + b": " + value for name, value in SECURITY_HEADERS),
    ]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


_REQUEST_TIMEOUT = raw_problem(408, "the request's headers took too long to arrive")
_FOLDED = raw_problem(400, "a header is folded over lines (obsolete line folding is refused)")
_MALFORMED = raw_problem(400, "the request is not valid HTTP/1.1")


def _folded(head: bytes) -> bool:
    """Whether a header line of `head` (request line first) continues the one before it
    (starts with a space or a tab): RFC 9112 5.2's obsolete line folding."""
    return any(line[:1] in (b" ", b"\t") for line in head.split(b"\r\n")[1:])


def timed_protocol(header_seconds: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing connections that take over `header_seconds` to
    send a request's headers (counted from the connection or the previous response)."""

    class HeaderTimedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE and _folded(self._head_seen(data)):
                self.transport.write(_FOLDED)
                self.transport.close()
                return
            super().data_received(data)
            if self.conn.their_state is h11.IDLE:  # still reading a request's headers
                self._arm()
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:
            """The parser's refusal of a malformed request, as problem details with the
            security headers like every other error (uvicorn's own is plain text)."""
            if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                self.transport.write(_MALFORMED)
            self.transport.close()

        def _head_seen(self, data: bytes) -> bytes:
            """The request's header block so far (its start, up to the blank line)."""
            self._head = (getattr(self, "_head", b"") + data)[:_HEAD_LIMIT]
            return self._head.split(b"\r\n\r\n", 1)[0]

        def on_response_complete(self) -> None:
            self._head = b""
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # the next request's headers get the same time

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(header_seconds, self._expired)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _expired(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                if self.conn.our_state is h11.IDLE:
                    self.transport.write(_REQUEST_TIMEOUT)
                self.transport.close()

    return HeaderTimedH11Protocol


def uvicorn_options(settings: ServiceSettings) -> dict[str, Any]:
    """The `uvicorn.Config` options that enforce `settings`' slow-client limits."""
    return {
        "http": timed_protocol(settings.header_timeout_seconds),
        "timeout_keep_alive": max(1, round(settings.keep_alive_seconds)),
        "h11_max_incomplete_event_size": 64 * 1024,
    }


class BodyTimeout:
    """408 when a body's next piece takes over `idle_seconds`, or all of it `total_seconds`."""

    def __init__(self, app: ASGIApp, idle_seconds: float, total_seconds: float) -> None:
        self.app = app
        self.idle_seconds = idle_seconds
        self.total_seconds = total_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline: float | None = None
        complete = False

        async def timed_receive() -> Message:
            nonlocal deadline, complete
            if complete:  # e.g. a streaming response waiting for the disconnect
                return await receive()
            now = time.monotonic()
            deadline = deadline or now + self.total_seconds
            try:
                message = await asyncio.wait_for(
                    receive(), min(self.idle_seconds, max(0.0, deadline - now))
                )
            except TimeoutError:
                raise HTTPException(
                    408,
                    "the request body arrived too slowly; send it at once",
                    headers={"Connection": "close"},
                ) from None
            complete = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        await self.app(scope, timed_receive, send)
