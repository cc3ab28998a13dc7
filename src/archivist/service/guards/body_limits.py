"""Request-body limits counted on the bytes as they arrive, chunked or not.

Uploads (`POST .../documents`) may carry `max_upload_bytes` plus multipart framing; every
other body is JSON and gets the small `max_json_bytes`. A declared `Content-Length` over
the limit is refused before anything is read; otherwise Starlette's body-limit responder
counts the received bytes and the request fails with 413 the moment the limit is crossed
(the multipart parser then closes, and so deletes, its temporary files).
"""

from __future__ import annotations

import re

from starlette.datastructures import Headers
from starlette.middleware.body_limit import RequestBodyLimitResponder
from starlette.types import ASGIApp, Receive, Scope, Send

from archivist.service.problems import LIMIT_SCOPE_KEY, send_problem

MULTIPART_OVERHEAD = 64 * 1024
"""Room for multipart boundaries and part headers on top of the files themselves."""

UPLOAD_PATH = re.compile(r"^(/v1/knowledge-bases/[^/]+/documents|/openai/v1/files)/?$")
"""The paths that take file uploads: the native one and the OpenAI-compatible one."""


def too_large(limit: int) -> str:
    """The detail of a 413."""
    return f"the request body is larger than the limit of {limit} bytes"


class BodyLimits:
    """413 for a body over its limit: `upload_bytes` on the upload route, else `json_bytes`."""

    def __init__(self, app: ASGIApp, upload_bytes: int, json_bytes: int) -> None:
        self.app = app
        self.upload_bytes = upload_bytes
        self.json_bytes = json_bytes

    def limit_for(self, scope: Scope) -> tuple[int, int]:
        """The body limit of the request `scope`: (bytes counted, bytes named in a 413)."""
        if scope["method"] == "POST" and UPLOAD_PATH.match(scope["path"]):
            return self.upload_bytes + MULTIPART_OVERHEAD, self.upload_bytes
        return self.json_bytes, self.json_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, public = self.limit_for(scope)
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await send_problem(send, 413, too_large(public), scope=scope)
            return
        scope[LIMIT_SCOPE_KEY] = public
        await RequestBodyLimitResponder(self.app, limit)(scope, receive, send)
