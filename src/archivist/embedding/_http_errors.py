"""An embedding provider's HTTP session, and how its failed requests become embedding errors."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from archivist._http.retry import should_retry
from archivist._http.session import HttpSession
from archivist.embedding.errors import EmbeddingAPIError, EmbeddingError, TransientEmbeddingError

if TYPE_CHECKING:
    from archivist.embedding.base import EmbeddingModelBase

ErrorReader = Callable[[Any], tuple[str | None, str | None]]
"""Reads `(code, message)` out of a provider's parsed error body."""


class EmbeddingHttpErrors:
    """Names one model's HTTP failures: transient ones (per `should_retry`) as
    `TransientEmbeddingError`, the rest as `EmbeddingAPIError` or `EmbeddingError`."""

    def __init__(self, model: str, read_error: ErrorReader) -> None:
        self.model = model
        self._read_error = read_error

    def unreachable(self, url: str, error: httpx.TransportError, timeout: float) -> Exception:
        if isinstance(error, httpx.TimeoutException):
            reason = f"request timed out after {timeout:g}s ({type(error).__name__})"
        else:
            reason = f"connection failed: {type(error).__name__}: {error}"
        return TransientEmbeddingError(reason, model=self.model)

    def rejected(self, response: httpx.Response, retry_after: float | None) -> Exception:
        status = response.status_code
        code: str | None = None
        message: str | None = None
        with contextlib.suppress(ValueError, TypeError, AttributeError, KeyError):
            code, message = self._read_error(json.loads(response.content))
        message = message or response.text[:500] or response.reason_phrase or "no message"
        if should_retry(status, code):
            return TransientEmbeddingError(
                message, status=status, code=code, model=self.model, retry_after=retry_after
            )
        return EmbeddingAPIError(status, message, code=code, model=self.model)

    def malformed(self, url: str, response: httpx.Response) -> Exception:
        snippet = response.text[:200]
        return EmbeddingError(
            f"{self.model}: malformed JSON in the response from {url}: {snippet!r}"
        )


def embedding_session(
    model: EmbeddingModelBase,
    read_error: ErrorReader,
    *,
    timeout: float,
    http_client: httpx.AsyncClient | None,
) -> HttpSession:
    """The session an HTTP embedding model posts through: `Retry-After` dates are measured on
    the model's clock, and failures become embedding errors naming the model."""
    return HttpSession(
        timeout=timeout,
        http_client=http_client,
        now=lambda: model.clock.now(),
        errors=EmbeddingHttpErrors(model.model, read_error),
    )
