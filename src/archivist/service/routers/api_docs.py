"""`GET /docs`: Swagger UI for the API, served by the service itself.

FastAPI's own page loads Swagger UI from a CDN and starts it with an inline script; the
service's Content-Security-Policy allows neither (and the service must work offline). The
Swagger UI files come from the `fastapi-offline` package, the page and its start script
from our static folder.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from archivist.service.routers.page import STATIC_DIR


def swagger_ui_dir() -> Path:
    """The folder of Swagger UI's JavaScript and CSS files."""
    import fastapi_offline

    return Path(fastapi_offline.__file__).resolve().parent / "static"


router = APIRouter(include_in_schema=False)


@router.get("/docs")
async def docs() -> FileResponse:
    """The API's interactive documentation; "Authorize" takes an API key."""
    return FileResponse(STATIC_DIR / "docs.html", media_type="text/html")
