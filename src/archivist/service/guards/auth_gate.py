"""Authentication (and the per-key rate) from the request headers alone, before any body
byte is read.

Every `/v1` and `/mcp` request must carry `Authorization: Bearer KEY` of an active key: otherwise
the answer is 401 at once and the connection is closed with its body unread, so nobody
without a key can make the service receive, parse or store anything. The tenant found is
left in the request state for the `Tenant` dependency.
"""

from __future__ import annotations

import asyncio

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from archivist.service.guards.rate_limit import RateLimiter, retry_after
from archivist.service.problems import send_problem
from archivist.service.storage.keys import cached_tenant_for_key, hash_key, tenant_for_key

TENANT_STATE = "archivist_tenant"
"""`request.state` attribute holding the authenticated tenant."""

_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def bearer_key(headers: Headers) -> str | None:
    """The key of an `Authorization: Bearer KEY` header, or None."""
    scheme, _, key = headers.get("authorization", "").partition(" ")
    key = key.strip()
    return key if scheme.lower() == "bearer" and key else None


class AuthGate:
    """401 for requests under `prefixes` without an active key, decided from the headers."""

    def __init__(
        self,
        app: ASGIApp,
        rate: float = 50.0,
        burst: int = 200,
        prefixes: tuple[str, ...] = ("/v1/", "/openai/", "/mcp"),
    ) -> None:
        self.app = app
        self.prefixes = prefixes
        self.limiter = RateLimiter(rate, burst)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefixes):
            await self.app(scope, receive, send)
            return
        key = bearer_key(Headers(scope=scope))
        if key is None:
            await send_problem(
                send,
                401,
                "missing API key: send Authorization: Bearer KEY",
                _CHALLENGE,
                scope=scope,
            )
            return
        engine = scope["app"].state.service.engine
        tenant = cached_tenant_for_key(engine, key)  # a key seen moments ago: no thread hop
        if tenant is None:
            tenant = await asyncio.to_thread(tenant_for_key, engine, key)
        if tenant is None:
            await send_problem(send, 401, "invalid or revoked API key", _CHALLENGE, scope=scope)
            return
        wait = self.limiter.take(hash_key(key))
        if wait > 0:
            await send_problem(
                send,
                429,
                f"too many requests with this key; retry in {retry_after(wait)} s",
                {"Retry-After": retry_after(wait)},
                scope=scope,
            )
            return
        scope.setdefault("state", {})[TENANT_STATE] = tenant
        await self.app(scope, receive, send)
