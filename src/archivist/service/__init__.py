"""The knowledge service: an HTTP API and web page over tenant-scoped knowledge bases.

Each name is imported on first use, so the service's parts without HTTP (the operations,
the indexer, the worker) load without FastAPI."""

from typing import TYPE_CHECKING

from archivist._util.lazy import lazy_exports

if TYPE_CHECKING:
    from archivist.service.app import create_app
    from archivist.service.settings import ServiceSettings

__all__ = ["ServiceSettings", "create_app"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "create_app": "archivist.service.app",
        "ServiceSettings": "archivist.service.settings",
    },
)
