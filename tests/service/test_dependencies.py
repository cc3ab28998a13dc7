"""Every request-scoped dependency of the service is a coroutine: FastAPI runs a plain
function dependency in its thread pool, one thread hop per request."""

from __future__ import annotations

import inspect

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from archivist.service.app import KEYED_ROUTERS, OPEN_ROUTERS


def _calls(dependant: Dependant) -> list[object]:
    found: list[object] = []
    for sub in dependant.dependencies:
        if sub.call is not None:
            found.append(sub.call)
        found.extend(_calls(sub))
    return found


def test_no_route_hops_to_a_thread_to_resolve_its_dependencies() -> None:
    routes = [
        route
        for module in (*OPEN_ROUTERS, *KEYED_ROUTERS)
        for route in module.router.routes
        if isinstance(route, APIRoute)
    ]
    assert any(route.path.endswith("/search") for route in routes)
    sync = {
        f"{route.path}: {getattr(call, '__name__', call)}"
        for route in routes
        for call in _calls(route.dependant)
        if not (
            inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(type(call).__call__)
        )
    }
    assert sync == set()
