"""Security headers on every response, as a small pure-ASGI middleware.

A middleware of our own rather than the `secure` package: the policy is a handful of
constant headers, responses that set their own `Content-Security-Policy` (downloads:
`sandbox`) must keep it, and a pure ASGI layer also covers the answers other middleware
sends before the app runs (401, 413) without buffering streamed bodies.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""The page's policy: only our own script and style files; no inline code; never framed."""

DOWNLOAD_CSP = "sandbox; default-src 'none'; frame-ancestors 'none'"
"""For raw uploads: a unique opaque origin where nothing runs, should one ever be rendered."""

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", PAGE_CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=(), interest-cohort=()"),
)
"""Added to every response that does not set the header itself."""


class SecurityHeaders:
    """Add `SECURITY_HEADERS` to each HTTP response; headers the app set win."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
