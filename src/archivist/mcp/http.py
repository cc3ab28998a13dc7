"""An MCP server over Streamable HTTP behind bearer keys: a plain ASGI app to mount anywhere.

Every request must carry `Authorization: Bearer KEY`; `tenant_of(KEY)` names the caller's
tenant or refuses it (401). The caller is recorded the way the SDK expects
(`scope["user"]`), so the SDK also binds each MCP session to the key that opened it: another
key presenting that session id is answered as if the session did not exist.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.authentication import AuthCredentials
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

TenantLookup = Callable[[str], Awaitable[str | None]]
"""The tenant an API key belongs to, or None for a missing, invalid or revoked key."""


def caller_tenant(request: Any) -> str:
    """The tenant `BearerKeyApp` recorded for `request` (an HTTP request the app let through)."""
    user = request.scope.get("user") if isinstance(request, Request) else None
    if not isinstance(user, AuthenticatedUser):
        raise PermissionError("this MCP request was not authenticated")
    return user.access_token.client_id


class BearerKeyApp:
    """The Streamable HTTP transport of `server`, for callers with a valid bearer key.

    Use `running()` around the app's lifetime (e.g. in the host app's lifespan).
    """

    def __init__(self, server: Server[Any], tenant_of: TenantLookup) -> None:
        self.tenant_of = tenant_of
        self.sessions = StreamableHTTPSessionManager(app=server)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager's task group: MCP sessions live inside it."""
        async with self.sessions.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.sessions.handle_request(scope, receive, send)
            return
        key = _bearer(scope)
        if key is None:
            await _unauthorized(send, "missing API key: send Authorization: Bearer KEY")
            return
        tenant = await self.tenant_of(key)
        if tenant is None:
            await _unauthorized(send, "invalid or revoked API key")
            return
        token = AccessToken(
            token=key,
            client_id=tenant,
            subject=hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest(),
            scopes=[],
        )
        scope = {**scope, "user": AuthenticatedUser(token), "auth": AuthCredentials([])}
        await self.sessions.handle_request(scope, receive, _ProblemErrors(send))


class _ProblemErrors:
    """`send` with the transport's HTTP errors (4xx/5xx, such as a wrong method, content type
    or session) turned into problem+json, as every other error of the host is; a JSON-RPC
    error's members stay beside the problem's, so MCP clients read them as before."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._start: Message | None = None
        self._body = b""

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start" and _plain_error(message):
            self._start = message
            return
        if self._start is None or message["type"] != "http.response.body":
            await self._send(message)
            return
        self._body += message.get("body", b"")
        if message.get("more_body", False):
            return
        start, self._start = self._start, None
        body = _problem(start["status"], self._body)
        headers = [
            (name, value)
            for name, value in start.get("headers", [])
            if name.lower() not in (b"content-type", b"content-length")
        ]
        headers += [
            (b"content-type", b"application/problem+json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await self._send({**start, "headers": headers})
        await self._send({"type": "http.response.body", "body": body})


def _plain_error(start: Message) -> bool:
    """Whether `start` begins an error response that is not problem details yet."""
    if int(start.get("status", 200)) < 400:
        return False
    for name, value in start.get("headers", []):
        if name.lower() == b"content-type":
            return bool(value.split(b";")[0].strip().lower() != b"application/problem+json")
    return True


_DETAIL_CHARS = 500


def _problem(status: int, body: bytes) -> bytes:
    """Problem details for an error `status` whose `body` (a JSON-RPC error, or a few words
    of text) the transport wrote."""
    try:
        rpc = json.loads(body)
    except ValueError:
        rpc = None
    members = rpc if isinstance(rpc, dict) else {}
    error = members.get("error")
    words = body.decode("utf-8", "replace").strip()[:_DETAIL_CHARS] if rpc is None else None
    detail = error.get("message") if isinstance(error, dict) else words
    return json.dumps(
        {
            **members,
            "type": "about:blank",
            "title": HTTPStatus(status).phrase,
            "status": status,
            "detail": detail if isinstance(detail, str) else HTTPStatus(status).phrase,
        }
    ).encode()


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            scheme, _, key = value.decode("latin-1").partition(" ")
            key = key.strip()
            return key if scheme.lower() == "bearer" and key else None
    return None


async def _unauthorized(send: Send, detail: str) -> None:
    body = json.dumps(
        {"type": "about:blank", "title": "Unauthorized", "status": 401, "detail": detail}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b"Bearer"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
