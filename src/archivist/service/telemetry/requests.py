"""`RequestTelemetry`: each HTTP request's id, route template, status and duration.

The outermost middleware: it sees every answer, the 401, 413 and 429 sent before routing
too. It gives the request its id (echoed in `X-Request-ID` and set in `REQUEST_ID` while
the request is handled), and when the answer ends counts it in the metrics and logs one
`archivist.access` record. The route is the template the router matched (the concrete
path names a tenant's knowledge base and never appears); for an answer sent before
routing it is found by matching the app's routes, and a path no route matches is
`unmatched`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from starlette.datastructures import Headers
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from archivist.service.telemetry.metrics import ServiceMetrics
from archivist.service.telemetry.request_id import HEADER, REQUEST_ID, request_id_for

access_logger = logging.getLogger("archivist.access")

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
"""Methods counted by name; any other is counted as OTHER (labels stay bounded)."""

UNMATCHED = "unmatched"


def flat_routes(routes: Iterable[BaseRoute]) -> list[BaseRoute]:
    """`routes` with each included router replaced by its own routes (FastAPI wraps an
    `include_router` router in one route object; its routes carry the full paths)."""
    flat: list[BaseRoute] = []
    for route in routes:
        included = getattr(route, "original_router", None)
        flat += flat_routes(included.routes) if included is not None else [route]
    return flat


def route_template(scope: Scope, routes: Iterable[BaseRoute]) -> str:
    """The path template of the route that answered `scope`, or of the one among `routes`
    that would have answered it."""
    route: Any = scope.get("route")
    if route is None:
        partial = None
        for candidate in routes:
            match, _ = candidate.matches(scope)
            if match is Match.FULL:
                route = candidate
                break
            if match is Match.PARTIAL and partial is None:
                partial = candidate
        route = route or partial
    template = getattr(route, "path_format", None)
    return template if isinstance(template, str) else UNMATCHED


class RequestTelemetry:
    """Request ids, the access record and (when `metrics` is given) the HTTP metrics."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics | None = None) -> None:
        self.app = app
        self.metrics = metrics
        self._routes: list[BaseRoute] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = request_id_for(Headers(scope=scope).get(HEADER))
        started = time.perf_counter()
        status = 500  # an exception before any answer: the server's error page
        echoed = request_id.encode()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [*message.get("headers", []), (HEADER.encode(), echoed)]
                message = {**message, "headers": headers}
            await send(message)

        token = REQUEST_ID.set(request_id)
        if self.metrics is not None:
            self.metrics.in_progress.inc()
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - started
            method = scope["method"] if scope["method"] in METHODS else "OTHER"
            if self._routes is None:  # the app's routes are all added by the first request
                self._routes = flat_routes(scope["app"].router.routes)
            route = route_template(scope, self._routes)
            if self.metrics is not None:
                self.metrics.in_progress.dec()
                self.metrics.observe_request(method, route, status, seconds)
            access_logger.info(
                "%s %s %d %.1f ms",
                method,
                route,
                status,
                seconds * 1000,
                extra={
                    "method": method,
                    "route": route,
                    "status": status,
                    "duration_ms": round(seconds * 1000, 1),
                },
            )
            REQUEST_ID.reset(token)
