"""Posting JSON to an embedding provider, with its failures mapped onto our error types."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from archivist._http_retry import retry_after_seconds, should_retry
from archivist.embedding.errors import EmbeddingAPIError, EmbeddingError, TransientEmbeddingError

ErrorReader = Callable[[Any], tuple[str | None, str | None]]
"""Reads `(code, message)` out of a provider's parsed error body."""


class JsonPoster:
    """POSTs JSON bodies for one model; uses the caller's `httpx.AsyncClient` or owns one."""

    def __init__(
        self,
        *,
        model: str,
        timeout: float,
        http_client: httpx.AsyncClient | None,
        read_error: ErrorReader,
    ) -> None:
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
            raise TypeError(
                f"http_client must be an httpx.AsyncClient, got {type(http_client).__name__}"
            )
        self.model = model
        self.timeout = float(timeout)
        self._borrowed = http_client
        self._owned: httpx.AsyncClient | None = None
        self._owned_loop: asyncio.AbstractEventLoop | None = None
        self._read_error = read_error

    def _client(self) -> httpx.AsyncClient:
        if self._borrowed is not None:
            return self._borrowed
        loop = asyncio.get_running_loop()
        # A client's connection pool belongs to the loop that opened it.
        if self._owned is None or self._owned_loop is not loop:
            self._owned = httpx.AsyncClient(timeout=self.timeout)
            self._owned_loop = loop
        return self._owned

    async def post(self, url: str, body: Mapping[str, Any], headers: Mapping[str, str]) -> Any:
        """POST `body`; return the parsed JSON of a 2xx answer, raise a typed error otherwise."""
        try:
            response = await self._client().post(
                url, json=body, headers=dict(headers), timeout=self.timeout
            )
        except httpx.TimeoutException as error:
            raise TransientEmbeddingError(
                f"request timed out after {self.timeout:g}s ({type(error).__name__})",
                model=self.model,
            ) from error
        except httpx.TransportError as error:
            raise TransientEmbeddingError(
                f"connection failed: {type(error).__name__}: {error}", model=self.model
            ) from error
        if response.status_code >= 400:
            raise self._status_error(response)
        try:
            return json.loads(response.content)
        except ValueError as error:
            snippet = response.text[:200]
            raise EmbeddingError(
                f"{self.model}: malformed JSON in the response from {url}: {snippet!r}"
            ) from error

    def _status_error(self, response: httpx.Response) -> EmbeddingAPIError:
        status = response.status_code
        code: str | None = None
        message: str | None = None
        with contextlib.suppress(ValueError, TypeError, AttributeError, KeyError):
            code, message = self._read_error(json.loads(response.content))
        message = message or response.text[:500] or response.reason_phrase or "no message"
        if should_retry(status, code):
            return TransientEmbeddingError(
                message,
                status=status,
                code=code,
                model=self.model,
                retry_after=retry_after_seconds(response.headers),
            )
        return EmbeddingAPIError(status, message, code=code, model=self.model)

    async def aclose(self) -> None:
        """Close the client this poster opened (a borrowed client stays the caller's)."""
        if self._owned is not None:
            owned, self._owned = self._owned, None
            await owned.aclose()
