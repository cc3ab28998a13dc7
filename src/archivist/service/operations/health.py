"""Readiness: the operation behind `GET /healthz`."""

from __future__ import annotations

import asyncio

from sqlalchemy import Engine, text

from archivist.service.state import ServiceState
from archivist.service.storage.database import reading


def _ping(engine: Engine) -> None:
    with reading(engine) as db:
        db.execute(text("SELECT 1"))


async def check_ready(state: ServiceState) -> None:
    """Return once the service's database answers; its error (an outage, answered 503 naming
    the dependency) while it cannot be reached."""
    await asyncio.to_thread(_ping, state.engine)
