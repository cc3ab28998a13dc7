"""`GET /livez`: the process answers; `GET /healthz`: it can serve requests (its database
answers; 503 naming the dependency otherwise)."""

from __future__ import annotations

from fastapi import APIRouter

from archivist.service.dependencies import State
from archivist.service.operations import health as operations

router = APIRouter(tags=["health"])


@router.get("/livez")
async def livez() -> dict[str, str]:
    """200 `{"status": "alive"}` while the process answers at all, whatever its dependencies
    do: a supervisor restarts the process only when this fails."""
    return {"status": "alive"}


@router.get("/healthz")
async def healthz(state: State) -> dict[str, str]:
    """200 `{"status": "ok"}` while the service can serve requests; 503 with Retry-After,
    naming the dependency, while its database cannot be reached."""
    await operations.check_ready(state)
    return {"status": "ok"}
