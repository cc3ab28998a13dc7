"""Exceptions raised by embedding models."""

from __future__ import annotations


class EmbeddingError(Exception):
    """An embedding model failed or returned something unusable."""


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
