"""`GET /`: the single-page web client (plain HTML and JavaScript, no build step)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

router = APIRouter(include_in_schema=False)


@router.get("/")
async def index() -> FileResponse:
    """The page; it talks to the `/v1` API with the key the user logs in with."""
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html")
