"""The knowledge service: an HTTP API and web page over tenant-scoped knowledge bases."""

from archivist.service.app import create_app
from archivist.service.settings import ServiceSettings

__all__ = ["ServiceSettings", "create_app"]
