"""What a client may read about an error, for a problem+json detail or a failed document's
`error`: built from the error's fields, never from a message that may hold server paths."""

from __future__ import annotations

import os

from archivist.errors import (
    ChatModelError,
    ConfigurationError,
    DocumentNotFoundError,
    EmbeddingError,
    FileError,
    InvalidArgumentError,
    StoreError,
    StoreLockedError,
)
from archivist.service.errors import Conflict, NotFound, QuotaExceeded, UploadRejected


def public_detail(error: BaseException) -> str:
    """What a client may read about `error`: built from its fields, so a server path never
    shows (a file is named by its `filename`; a store's location and holder stay out)."""
    if isinstance(error, FileError):
        return f"{error.filename}: {error.reason}" if error.filename else error.reason
    if isinstance(error, DocumentNotFoundError):
        return f"no document {error.document_id!r}" if error.document_id else "no such document"
    if isinstance(error, StoreLockedError):
        return "the knowledge base is busy; try again shortly"
    if isinstance(error, StoreError | ConfigurationError):
        return f"{type(error).__name__}; the service log has the details"
    if isinstance(error, InvalidArgumentError | EmbeddingError | ChatModelError):
        return str(error)  # the caller's own values, the model's name and its provider's words
    if isinstance(error, NotFound | Conflict | QuotaExceeded | UploadRejected):
        return str(error)  # the service's refusals: built from names, ids and counts
    if isinstance(error, OSError):
        name = os.path.basename(os.fsdecode(error.filename)) if error.filename else None
        what = error.strerror or type(error).__name__
        return f"{name}: {what}" if name else what
    return f"{type(error).__name__}; the service log has the details"
