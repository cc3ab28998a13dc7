"""`GET /healthz`: the process is up and its database answers."""

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


@router.get("/healthz")
async def healthz(state: State) -> dict[str, str]:
    """200 `{"status": "ok"}` while the service can serve requests."""
    await asyncio.to_thread(_ping, state)
    return {"status": "ok"}
