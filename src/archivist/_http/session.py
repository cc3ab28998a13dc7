"""One client lifecycle for every provider: which `httpx.AsyncClient` a request goes through,
when it is opened and closed, and how a failed request becomes the provider's typed error."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import httpx

from archivist._http.retry import retry_after_seconds


class ProviderErrors(Protocol):
    """Turns a failed request into the exception a provider's callers expect."""

    def unreachable(self, url: str, error: httpx.TransportError, timeout: float) -> Exception:
        """The request never got an answer: refused, dropped or timed out."""
        ...

    def rejected(self, response: httpx.Response, retry_after: float | None) -> Exception:
        """The provider answered with status >= 400; the response body has been read."""
        ...

    def malformed(self, url: str, response: httpx.Response) -> Exception:
        """A 2xx answer whose body is not JSON."""
        ...


class HttpSession:
    """Sends one provider's requests through one `httpx.AsyncClient`; `now()` is the wall
    time (of the provider's clock) that an HTTP-date `Retry-After` is measured from.

    A caller-given `http_client` is used as it is and never closed here. Otherwise the session
    opens one client on first use and reuses it for every request (one connection pool) until
    `aclose()`. A pool belongs to the event loop that opened it, so a request from another loop
    opens a new client; the old one is closed on its own loop when that loop is still open
    (run from another thread), and only dropped, its sockets left to the garbage collector,
    when that loop has already closed, as nothing can be awaited on a closed loop.
    """

    def __init__(
        self,
        *,
        timeout: float,
        http_client: httpx.AsyncClient | None,
        now: Callable[[], float],
        errors: ProviderErrors,
    ) -> None:
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
            raise TypeError(
                f"http_client must be an httpx.AsyncClient, got {type(http_client).__name__}"
            )
        self.timeout = float(timeout)
        self._now = now
        self._errors = errors
        self._borrowed = http_client
        self._owned: httpx.AsyncClient | None = None
        self._owned_loop: asyncio.AbstractEventLoop | None = None

    async def client(self) -> httpx.AsyncClient:
        """The client for a request on the running loop: the borrowed one, else our own."""
        if self._borrowed is not None:
            return self._borrowed
        loop = asyncio.get_running_loop()
        if self._owned is not None and self._owned_loop is not loop:
            await self._close_owned()
        if self._owned is None:
            self._owned = httpx.AsyncClient(timeout=self.timeout)
            self._owned_loop = loop
        return self._owned

    async def open(
        self, url: str, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> httpx.Response:
        """POST `body` as JSON; return the 2xx response with its body unread (the caller
        closes it), or raise the provider's error for a failure."""
        client = await self.client()
        request = client.build_request(
            "POST", url, json=body, headers=dict(headers), timeout=self.timeout
        )
        try:
            response = await client.send(request, stream=True)
        except httpx.TransportError as error:
            raise self._errors.unreachable(url, error, self.timeout) from error
        if response.status_code < 400:
            return response
        await self._read_whole(url, response)
        retry_after = retry_after_seconds(response.headers, self._now())
        raise self._errors.rejected(response, retry_after)

    async def post_json(self, url: str, body: Mapping[str, Any], headers: Mapping[str, str]) -> Any:
        """POST `body` as JSON and return the parsed JSON of the 2xx answer."""
        response = await self.open(url, body, headers)
        await self._read_whole(url, response)
        try:
            return json.loads(response.content)
        except ValueError as error:
            raise self._errors.malformed(url, response) from error

    async def _read_whole(self, url: str, response: httpx.Response) -> None:
        """Read the rest of `response` into `response.content` and release its connection."""
        try:
            await response.aread()
        except httpx.TransportError as error:
            raise self._errors.unreachable(url, error, self.timeout) from error
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        """Close the client this session opened (a borrowed client stays the caller's)."""
        await self._close_owned()

    async def _close_owned(self) -> None:
        owned, loop = self._owned, self._owned_loop
        self._owned = self._owned_loop = None
        if owned is None or loop is None:
            return
        if loop is asyncio.get_running_loop():
            await owned.aclose()
        elif not loop.is_closed():
            future = asyncio.run_coroutine_threadsafe(owned.aclose(), loop)
            if loop.is_running():
                await asyncio.wrap_future(future)
            # A loop that is open but idle runs the close when it next runs.
