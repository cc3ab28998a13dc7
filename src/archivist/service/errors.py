"""The service's own refusals, beside the library's `archivist.errors` and in its tree:
`archivist.service.problems` gives each its HTTP status."""

from __future__ import annotations

from typing import Any

from archivist.errors import (
    ArchivistError,
    ConfigurationError,
    InvalidArgumentError,
    UnsupportedFileTypeError,
)


class NotFound(ArchivistError, LookupError):
    """The addressed record does not exist for the caller (also: it is another tenant's)."""


class Conflict(ArchivistError):
    """The request cannot be done in the service's present state (e.g. busy, not set up)."""


class InvalidRequest(InvalidArgumentError):
    """The caller's values break a rule the request schema cannot state."""


class KBExistsError(InvalidArgumentError):
    """The tenant already has a knowledge base of that name."""

    def __init__(self, message: str) -> None:
        super().__init__(message, argument="name")


class QuotaExceeded(ArchivistError):
    """An operation would take the tenant over a quota; `quota` names it (a field of
    `Quota`) and the message says the use and the limit."""

    def __init__(self, message: str, *, quota: str) -> None:
        super().__init__(message)
        self.quota = quota


class UploadRejected(ArchivistError, ValueError):
    """An upload that cannot be accepted; `status` is the HTTP status to answer with, and
    `errors` the problem's entries, one per file, when every file was refused."""

    def __init__(
        self, status: int, message: str, errors: list[dict[str, Any]] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.errors = errors


class UploadTypeError(UnsupportedFileTypeError):
    """The upload's type is not accepted; the message names the file, the reason and the fix."""


class FileStoreError(ConfigurationError):
    """A `--files-url` that cannot be used; the message names it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, setting="files_url")
