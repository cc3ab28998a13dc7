"""The one tree of Archivist's errors: catch `ArchivistError` for anything the library raises
on purpose, or a branch of it for one kind of failure.

Each class keeps the stdlib base its errors had before (`ValueError`, `LookupError`,
`RuntimeError`), so `except ValueError` keeps catching a bad argument. The fields a caller
needs (which argument, which file, which process holds a store) are attributes, set where
the error is raised, so nothing has to read them back out of the message:

    ArchivistError
    ├── InvalidArgumentError (ValueError)       argument
    ├── ConfigurationError (ValueError)         setting
    ├── DocumentNotFoundError (LookupError)     document_id, knowledge_base
    ├── FileError                               path, filename, reason
    │   ├── UnsupportedFileTypeError (ValueError)   media_type, supported
    │   └── DocumentParseError (ValueError)
    ├── StoreError
    │   └── StoreLockedError (RuntimeError)     path, holder
    ├── EmbeddingError                          model
    │   ├── InvalidVectorError                  document_id, chunk_index, problem
    │   └── EmbeddingAPIError                   status, code, message
    │       └── TransientEmbeddingError         retry_after
    └── ChatModelError
        ├── ChatModelAPIError                   status_code, code, error_type, retry_after
        ├── ChatModelConnectionError
        └── ChatModelResponseError

The service's own refusals, in `archivist.service.errors`, hang from the same tree:
`QuotaExceeded` (`quota`), `UploadRejected` (`status`), `KBExistsError` (an
InvalidArgumentError), `FileStoreError` (a ConfigurationError) and `UploadTypeError` (an
UnsupportedFileTypeError).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

__all__ = [
    "ArchivistError",
    "ChatModelAPIError",
    "ChatModelConnectionError",
    "ChatModelError",
    "ChatModelResponseError",
    "ConfigurationError",
    "DocumentNotFoundError",
    "DocumentParseError",
    "EmbeddingAPIError",
    "EmbeddingError",
    "FileError",
    "InvalidArgumentError",
    "InvalidVectorError",
    "MissingExtraError",
    "StoreError",
    "StoreLockedError",
    "TransientEmbeddingError",
    "UnsupportedFileTypeError",
]


class ArchivistError(Exception):
    """Base class of every error Archivist raises on purpose."""

    def __reduce__(self) -> tuple[object, ...]:
        # Pickled with its fields (e.g. across a process pool), whatever its __init__ takes.
        return (_restore, (type(self), self.args, self.__dict__))


class InvalidArgumentError(ArchivistError, ValueError):
    """A value passed to the library breaks its rule; `argument` names the parameter (or
    the command-line option) when known."""

    def __init__(self, message: str, *, argument: str | None = None) -> None:
        super().__init__(message)
        self.argument = argument


class ConfigurationError(ArchivistError, ValueError):
    """A setting (environment variable, model name, settings file) cannot be used;
    `setting` names it when known."""

    def __init__(self, message: str, *, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


class MissingExtraError(ConfigurationError, ImportError):
    """`purpose` needs a package of an extra that is not installed.

    A ConfigurationError (so a ValueError: every caller that treats a file it cannot read as
    that file's failure treats this one so too) and an ImportError (a module is missing).
    `extra`, `module` and `purpose` say what is missing and what needed it.
    """

    def __init__(self, extra: str, module: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the {extra} extra: pip install 'archivist[{extra}]'",
            setting=f"archivist[{extra}]",
        )
        self.name = module
        self.extra = extra
        self.module = module
        self.purpose = purpose

    def __reduce__(self) -> tuple[type[MissingExtraError], tuple[str, str, str]]:
        return type(self), (self.extra, self.module, self.purpose)


class DocumentNotFoundError(ArchivistError, LookupError):
    """No document with this id exists inside the handle's scope."""

    def __init__(
        self,
        message: str,
        *,
        document_id: str | None = None,
        knowledge_base: str | None = None,
    ) -> None:
        super().__init__(message)
        self.document_id = document_id
        self.knowledge_base = knowledge_base


class FileError(ArchivistError):
    """One file cannot be used. `reason` says why without saying where; `path` is where it
    was read (a local path: show `filename` to anyone who should not see the machine's
    folders); the message is `"<path or filename>: <reason>"`."""

    def __init__(
        self,
        reason: str,
        *,
        path: str | os.PathLike[str] | None = None,
        filename: str | None = None,
    ) -> None:
        self.reason = reason
        self.path = None if path is None else os.fspath(path)
        self.filename = filename if filename is not None else _basename(self.path)
        where = self.path or self.filename
        super().__init__(f"{where}: {reason}" if where else reason)


class UnsupportedFileTypeError(FileError, ValueError):
    """No registered parser reads this file; `supported` lists the extensions that are read
    (the message names them after the `reason`)."""

    def __init__(
        self,
        reason: str,
        *,
        path: str | os.PathLike[str] | None = None,
        filename: str | None = None,
        media_type: str | None = None,
        supported: Sequence[str] = (),
    ) -> None:
        super().__init__(reason, path=path, filename=filename)
        self.media_type = media_type
        self.supported = list(supported)
        if self.supported:
            self.args = (f"{self.args[0]} (supported extensions: {', '.join(self.supported)})",)


class DocumentParseError(FileError, ValueError):
    """A file of a supported type cannot be read: corrupt, encrypted, empty, too large, or
    it changed while it was read."""


class ScansUnreadError(DocumentParseError):
    """The file's only text is in pictures (scanned pages) and no OCR reads them here (OCR
    is off, or no engine is installed): nothing is wrong with the file, and `reason` says
    how to have it read."""


class StoreError(ArchivistError):
    """The vector store cannot do what was asked (as opposed to a bad argument)."""


class StoreLockedError(StoreError, RuntimeError):
    """Another process (or another open store in this one) holds the store directory at
    `path`; `holder` names it (e.g. "PID 4242")."""

    def __init__(
        self, path: str | os.PathLike[str], holder: str, *, message: str | None = None
    ) -> None:
        self.path = os.fspath(path)
        self.holder = holder
        super().__init__(message or f"store at {self.path} is locked by {holder}")


class EmbeddingError(ArchivistError):
    """An embedding model failed or returned something unusable."""


class InvalidVectorError(EmbeddingError):
    """A model's output cannot be stored: a vector of the wrong size, with NaN or infinite
    values, or fewer or more vectors than inputs.

    `problem` says what is wrong; `document_id` and `chunk_index` say which chunk it was
    for, when that is known.
    """

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        problem: str | None = None,
        document_id: str | None = None,
        chunk_index: int | None = None,
    ) -> None:
        super().__init__(message)
        self.model = model
        self.problem = problem
        self.document_id = document_id
        self.chunk_index = chunk_index


class EmbeddingAPIError(EmbeddingError):
    """A provider answered with an error; `message` and `code` are the provider's own words.

    `status` is the HTTP status when there is one. 400/401/403/404 are permanent: they are
    raised at once, since retrying cannot fix a bad request or a bad key.
    """

    def __init__(
        self,
        status: int | None,
        message: str,
        *,
        code: str | None = None,
        model: str | None = None,
    ) -> None:
        self.status = status
        self.message = message
        self.code = code
        self.model = model
        parts = [f"HTTP {status}" if status is not None else None, code, message]
        prefix = f"{model}: " if model else ""
        super().__init__(prefix + " - ".join(p for p in parts if p))


class TransientEmbeddingError(EmbeddingAPIError):
    """A failure worth retrying (rate limit, overload, timeout, dropped connection).

    `retry_after` is the delay in seconds the provider asked for, when it asked.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        model: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(status, message, code=code, model=model)
        self.retry_after = retry_after


class ChatModelError(ArchivistError):
    """Base class of every chat-model failure."""


class ChatModelAPIError(ChatModelError):
    """The provider answered with an error status; `message` is the provider's own text and
    `retry_after` the seconds it asked to wait before another try, when it asked."""

    def __init__(
        self,
        status_code: int,
        message: str,
        *,
        code: str | None = None,
        error_type: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status_code = status_code
        self.retry_after = retry_after
        self.message = message
        self.code = code
        self.error_type = error_type
        label = f" ({code or error_type})" if (code or error_type) else ""
        super().__init__(f"chat model API error {status_code}{label}: {message}")


class ChatModelConnectionError(ChatModelError):
    """The provider could not be reached: connection refused or dropped, or no answer in time."""


class ChatModelResponseError(ChatModelError):
    """The provider's answer does not follow the wire format (bad JSON, missing fields)."""


def _restore(
    cls: type[ArchivistError], args: tuple[object, ...], state: dict[str, object]
) -> ArchivistError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


def _basename(path: str | None) -> str | None:
    return None if path is None else os.path.basename(path) or path
