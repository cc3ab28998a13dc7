"""One error shape for the whole service: `application/problem+json` (RFC 9457).

Every non-2xx answer carries `type`, `title`, `status` and `detail`; a 422 adds `errors`
(one entry per invalid field), as does an upload whose every file is refused (one per
file). Routes call the operations and let their errors through: the handlers installed
here turn those (`archivist.errors` and the service's own refusals, their status chosen by
class), an `HTTPException`, validation errors and any unexpected exception
into that shape, and the OpenAPI document is rewritten to say so. A detail is built from an
error's fields, never from a message that may hold the server's folders (a file is named by
`filename`, not `path`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.body_limit import MAX_BODY_SIZE_SCOPE_KEY
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from archivist.errors import (
    ArchivistError,
    ChatModelError,
    ConfigurationError,
    DocumentNotFoundError,
    EmbeddingError,
    FileError,
    InvalidArgumentError,
    StoreError,
    TransientEmbeddingError,
    UnsupportedFileTypeError,
)
from archivist.service.errors import (
    Conflict,
    KBExistsError,
    NotFound,
    QuotaExceeded,
    UploadRejected,
)
from archivist.service.outages import RETRY_AFTER_SECONDS, OutageLog, outage_of
from archivist.service.public_detail import public_detail
from archivist.service.schemas import Problem

PROBLEM_JSON = "application/problem+json"
LIMIT_SCOPE_KEY = "archivist.body_limit"
"""Set by the body-limit layer: the limit a 413 names (uploads: without multipart framing)."""
logger = logging.getLogger(__name__)

_EXTRA_STATUSES: dict[int, str] = {
    400: "the body could not be read (malformed multipart or not UTF-8)",
    401: "missing, invalid or revoked API key",
    413: "the request body is larger than the limit",
    422: "the request does not match the schema (see `errors`)",
    429: "too many requests for this key (see Retry-After)",
}
"""Statuses any authenticated `/v1` operation may answer, documented on every one."""


def title_of(status: int) -> str:
    """The standard reason phrase of `status`."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


OPENAI_PREFIX = "/openai/"
"""Paths of the OpenAI-compatible API: their errors come in OpenAI's shape,
`{"error": {"message", "type", "param", "code"}}`, which OpenAI's SDKs read."""
_OPENAI_TYPES = {
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "not_found"),
    409: ("invalid_request_error", "conflict"),
    413: ("invalid_request_error", "request_too_large"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


def speaks_openai(path: str) -> bool:
    """Whether `path` belongs to the OpenAI-compatible API."""
    return path.startswith(OPENAI_PREFIX)


def openai_error_body(status: int, message: str, param: str | None = None) -> bytes:
    """An error in OpenAI's shape, ASCII-escaped like a problem."""
    kind, code = _OPENAI_TYPES.get(
        status, ("server_error", None) if status >= 500 else ("invalid_request_error", None)
    )
    error = {"message": message, "type": kind, "param": param, "code": code}
    return json.dumps({"error": error}, ensure_ascii=True).encode("ascii")


def problem_body(status: int, detail: str, errors: list[dict[str, Any]] | None = None) -> bytes:
    """The JSON bytes of a problem; ASCII-escaped, so lone surrogates cannot break encoding."""
    problem: dict[str, Any] = {
        "type": "about:blank",
        "title": title_of(status),
        "status": status,
        "detail": detail,
    }
    if errors is not None:
        problem["errors"] = errors
    return json.dumps(problem, ensure_ascii=True).encode("ascii")


def problem_response(
    status: int,
    detail: str,
    headers: Mapping[str, str] | None = None,
    errors: list[dict[str, Any]] | None = None,
    *,
    path: str = "",
    param: str | None = None,
) -> Response:
    """A problem as a Starlette response (in OpenAI's shape on its API's `path`)."""
    if speaks_openai(path):
        return Response(
            openai_error_body(status, detail, param),
            status_code=status,
            headers=dict(headers or {}),
            media_type="application/json",
        )
    return Response(
        problem_body(status, detail, errors),
        status_code=status,
        headers=dict(headers or {}),
        media_type=PROBLEM_JSON,
    )


async def send_problem(
    send: Send,
    status: int,
    detail: str,
    headers: Mapping[str, str] | None = None,
    *,
    scope: Scope | None = None,
) -> None:
    """Answer a raw ASGI request with a problem and close the connection (its body unread);
    in OpenAI's shape when `scope` is a request to its API."""
    openai = scope is not None and speaks_openai(str(scope.get("path", "")))
    body = openai_error_body(status, detail) if openai else problem_body(status, detail)
    raw = [
        (b"content-type", b"application/json" if openai else PROBLEM_JSON.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _field_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    """Each validation error as `{loc, msg, type}`; the offending input is not echoed."""
    return [
        {
            "loc": [part if isinstance(part, int) else str(part) for part in error["loc"]],
            "msg": str(error["msg"]),
            "type": str(error["type"]),
        }
        for error in exc.errors()
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
    if exc.status_code == 413 and detail == "Content Too Large":  # Starlette's body limit
        limit = request.scope.get(LIMIT_SCOPE_KEY, request.scope.get(MAX_BODY_SIZE_SCOPE_KEY))
        detail = f"the request body is larger than the limit of {limit} bytes"
    headers = _closing(exc.status_code, exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(_allowed_methods(request))
    return problem_response(exc.status_code, detail, headers, path=request.url.path)


def _closing(status: int, headers: Mapping[str, str]) -> dict[str, str]:
    """`headers`, with `Connection: close` where the rest of the body is not wanted."""
    closing = dict(headers)
    if status in (408, 413):
        closing["Connection"] = "close"
    return closing


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route serves on the request's path (Starlette names only one)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, BaseRoute) and route.matches(request.scope)[0] != Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return sorted(methods)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = _field_errors(exc)
    summary = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors[:5])
    return problem_response(422, summary or "invalid request", errors=errors, path=request.url.path)


async def _server_error(request: Request, exc: Exception) -> Response:
    dependency = outage_of(exc)
    if dependency is not None:
        _outages.refused(dependency, exc)
        return problem_response(
            503,
            f"{dependency} cannot be reached just now; try again shortly",
            {"Retry-After": str(RETRY_AFTER_SECONDS)},
            path=request.url.path,
        )
    logger.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response(
        500, "internal error; the service log has the details", path=request.url.path
    )


_outages = OutageLog()


class UnhandledErrors:
    """Answers an exception no handler took: 503 with Retry-After when a dependency cannot
    be reached, else 500 with its traceback logged once. A response already started is cut
    short (the server drops the connection), logged as an outage or with the traceback. It
    sits inside the layers that add the security headers and request ids, so those answers
    carry them like any other."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception as exc:
            if started:  # too late to answer: the server drops the connection
                dependency = outage_of(exc)
                if dependency is None:
                    raise
                _outages.refused(dependency, exc)  # a body cut short by an outage
                return
            response = await _server_error(Request(scope), exc)
            await response(scope, receive, send)


_STATUS_BY_CLASS: tuple[tuple[type[ArchivistError], int], ...] = (
    (NotFound, 404),
    (Conflict, 409),
    (KBExistsError, 409),  # an InvalidArgumentError, but the name is taken, not invalid
    (QuotaExceeded, 403),
    (DocumentNotFoundError, 404),
    (UnsupportedFileTypeError, 415),
    (FileError, 422),
    (InvalidArgumentError, 422),
    (StoreError, 503),  # e.g. a store another process holds: try again
    (TransientEmbeddingError, 503),
    (EmbeddingError, 502),  # the model (or its provider) failed, not the request
    (ChatModelError, 502),
    (ConfigurationError, 500),
)
"""The status of an error that reaches a route, by class (first match wins)."""


def status_for(error: ArchivistError) -> int:
    """The HTTP status of a library or service error: an upload's own, else by its class."""
    if isinstance(error, UploadRejected):
        return error.status
    return next((status for kind, status in _STATUS_BY_CLASS if isinstance(error, kind)), 500)


async def _archivist_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ArchivistError)
    status = status_for(exc)
    openai = speaks_openai(request.url.path)
    if openai and status == 422 and isinstance(exc, InvalidArgumentError):
        status = 400  # OpenAI answers a value it refuses with 400; 422 stays the schema's
    if status >= 500:
        logger.error(
            "%s on %s %s", type(exc).__name__, request.method, request.url.path, exc_info=exc
        )
    headers = _closing(status, {})
    if isinstance(exc, TransientEmbeddingError) and exc.retry_after is not None:
        headers["Retry-After"] = str(max(1, round(exc.retry_after)))
    errors = exc.errors if isinstance(exc, UploadRejected) else None
    param = exc.argument if isinstance(exc, InvalidArgumentError) else None
    return problem_response(
        status, public_detail(exc), headers, errors, path=request.url.path, param=param
    )


def install_problem_handlers(app: FastAPI) -> None:
    """Route every error through the problem shape and document it in `/openapi.json`
    (with `UnhandledErrors` among the app's layers for what no handler takes)."""
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ArchivistError, _archivist_error)
    app.openapi = _problem_openapi(app, app.openapi)  # type: ignore[method-assign]


def _problem_openapi(
    app: FastAPI, original: Callable[[], dict[str, Any]]
) -> Callable[[], dict[str, Any]]:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = original()
        schemas = schema.setdefault("components", {}).setdefault("schemas", {})
        if "Problem" not in schemas:  # routers name it in their responses; else add it here
            flat = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(flat.pop("$defs", {}))
            schemas["Problem"] = flat
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        reference = {"$ref": "#/components/schemas/Problem"}
        for path, operations in schema.get("paths", {}).items():
            for operation in operations.values():
                responses = operation.setdefault("responses", {})
                if path.startswith("/v1/"):
                    for code, description in _EXTRA_STATUSES.items():
                        responses.setdefault(str(code), {"description": description})
                for code, response in responses.items():
                    if code[0] in "45":
                        response["content"] = {PROBLEM_JSON: {"schema": reference}}
        app.openapi_schema = schema
        return schema

    return openapi
