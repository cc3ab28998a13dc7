"""The refusals an operation raises besides the library's and the guards' own errors;
`archivist.service.problems` gives each its HTTP status."""

from __future__ import annotations

from archivist.errors import ArchivistError, InvalidArgumentError


class NotFound(ArchivistError, LookupError):
    """The addressed record does not exist for the caller (also: it is another tenant's)."""


class Conflict(ArchivistError):
    """The request cannot be done in the service's present state (e.g. busy, not set up)."""


class InvalidRequest(InvalidArgumentError):
    """The caller's values break a rule the request schema cannot state."""
