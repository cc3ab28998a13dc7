"""`GET /livez`: the process answers; `GET /healthz`: it can serve requests (its database
answers; 503 naming the dependency otherwise)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from sqlalchemy import text

from archivist.service.dependencies import State
from archivist.service.storage.database import reading

router = APIRouter(tags=["health"])


def _ping(state: State) -> None:
    with reading(state.engine) as db:
        db.execute(text("SELECT 1"))


@router.get("/livez")
async def livez() -> dict[str, str]:
    """200 `{"status": "alive"}` while the process answers at all, whatever its dependencies
    do: a supervisor restarts the process only when this fails."""
    return {"status": "alive"}


@router.get("/healthz")
async def healthz(state: State) -> dict[str, str]:
    """200 `{"status": "ok"}` while the service can serve requests; 503 with Retry-After,
    naming the dependency, while its database cannot be reached."""
    await asyncio.to_thread(_ping, state)
    return {"status": "ok"}
