"""OpenAI-compatible chat completions over httpx: OpenAI, DashScope compatible mode, vLLM,
Ollama, llama.cpp server and anything else that speaks `POST {base_url}/chat/completions`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import httpx
from httpx_sse import EventSource

from archivist._http.clock import SYSTEM_CLOCK, Clock
from archivist._http.retry import RetryPolicy, call_with_retries, should_retry
from archivist._http.session import HttpSession
from archivist.credential import OpenAICredential
from archivist.message import Msg
from archivist.model.base import ChatModelBase, response_as_delta
from archivist.model.delta import ChatDelta
from archivist.model.errors import (
    ChatModelAPIError,
    ChatModelConnectionError,
    ChatModelResponseError,
)
from archivist.model.openai_formatter import OpenAIChatFormatter
from archivist.model.openai_parser import (
    api_error_from_body,
    decode_json,
    parse_chunk,
    parse_completion,
)
from archivist.model.response import ChatResponse

T = TypeVar("T")


class OpenAIChatModel(ChatModelBase):
    """A chat model behind an OpenAI-compatible endpoint.

    `api_key` / `base_url` / `organization` given here win over the `credential`'s; an
    OpenAICredential fills the rest (key from `OPENAI_API_KEY`, none at all being fine for
    local servers; URL from `OPENAI_BASE_URL`, else the OpenAI API).

    408/409/429/5xx and connection failures are retried up to `max_retries` times with
    exponential backoff, waiting what the server asks in `Retry-After` / `retry-after-ms`
    when it says; error codes no wait will cure (`insufficient_quota`, ...) and other errors
    raise ChatModelAPIError at once with the provider's message. Retries wait on `clock`.
    `generate_kwargs` (temperature, max_tokens, ...) go into every request body. A given
    `http_client` is used as it is and left open; otherwise the model opens one client on
    first use and reuses its connections until `aclose()` (or the end of `async with model:`).
    """

    def __init__(
        self,
        model: str,
        *,
        credential: OpenAICredential | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        max_retries: int = 3,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 30.0,
        timeout: float = 120.0,
        generate_kwargs: dict[str, Any] | None = None,
        formatter: OpenAIChatFormatter | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.retry_policy = RetryPolicy(max_retries, retry_base_delay, retry_max_delay)
        self.clock = clock if clock is not None else SYSTEM_CLOCK
        self._session = HttpSession(
            timeout=timeout,
            http_client=http_client,
            now=lambda: self.clock.now(),
            errors=_ChatErrors(),
        )
        self.model_name = model
        self.credential = OpenAICredential(
            api_key=api_key or (credential.api_key if credential else None),
            base_url=base_url or (credential.base_url if credential else None),
            organization=organization or (credential.organization if credential else None),
        )
        self.base_url = self.credential.base_url
        self.timeout = timeout
        self.generate_kwargs = dict(generate_kwargs or {})
        self.formatter = formatter or OpenAIChatFormatter()

    async def generate(
        self,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
    ) -> ChatResponse:
        body = self.request_body(messages, tools, tool_choice, stream=False)
        answer = await self._with_retries(
            lambda: self._session.post_json(self.endpoint, body, self._headers(stream=False))
        )
        return parse_completion(answer)

    async def generate_stream(
        self,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
    ) -> AsyncIterator[ChatDelta]:
        body = self.request_body(messages, tools, tool_choice, stream=True)
        response = await self._with_retries(
            lambda: self._session.open(self.endpoint, body, self._headers(stream=True))
        )
        try:
            if "text/event-stream" not in response.headers.get("content-type", ""):
                # A server that ignored `stream` and answered in one piece.
                raw = (await response.aread()).decode("utf-8", "replace")
                yield response_as_delta(parse_completion(decode_json(raw, "chat completion")))
                return
            finished = done = False
            # Read to the end of the stream, past [DONE], so its connection can be reused.
            async for event in EventSource(response).aiter_sse():
                if done or not event.data:
                    continue  # an event with only a name, id or retry carries no chunk
                if event.data.strip() == "[DONE]":
                    finished = done = True
                    continue
                delta = parse_chunk(decode_json(event.data, "stream chunk"))
                finished = finished or delta.stop_reason is not None
                yield delta
            if not finished:
                raise ChatModelResponseError(
                    "stream ended before [DONE] or a finish_reason: the response is incomplete"
                )
        finally:
            await response.aclose()

    @property
    def endpoint(self) -> str:
        """The URL this model posts to."""
        return f"{self.base_url}/chat/completions"

    async def aclose(self) -> None:
        """Close the HTTP client this model opened (a caller-given `http_client` stays open)."""
        await self._session.aclose()

    def request_body(
        self,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
        *,
        stream: bool,
    ) -> dict[str, Any]:
        """The JSON body sent to `/chat/completions`."""
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": self.formatter.format_messages(messages),
        }
        if tools:
            body["tools"] = self.formatter.format_tools(tools)
            if tool_choice:
                body["tool_choice"] = self.formatter.format_tool_choice(tool_choice)
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        body.update(self.generate_kwargs)
        return body

    def _headers(self, *, stream: bool) -> dict[str, str]:
        accept = "text/event-stream" if stream else "application/json"
        return {"Content-Type": "application/json", "Accept": accept, **self.credential.headers()}

    async def _with_retries(self, call: Callable[[], Awaitable[T]]) -> T:
        return await call_with_retries(
            call,
            policy=self.retry_policy,
            clock=self.clock,
            service=self.model_name,
            retryable=_is_retryable,
        )


def _is_retryable(error: BaseException) -> bool:
    """A dropped connection or an error answer that `should_retry` accepts is tried again."""
    if isinstance(error, ChatModelAPIError):
        return should_retry(error.status_code, error.code)
    return isinstance(error, ChatModelConnectionError)


class _ChatErrors:
    """Names a failed chat request the way the chat model's callers expect."""

    def unreachable(self, url: str, error: httpx.TransportError, timeout: float) -> Exception:
        return ChatModelConnectionError(f"could not reach {url}: {error!r}")

    def rejected(self, response: httpx.Response, retry_after: float | None) -> Exception:
        raw = response.content.decode("utf-8", "replace")
        try:
            body: Any = decode_json(raw, "error body")
        except ChatModelResponseError:
            body = raw.strip()
        error = api_error_from_body(response.status_code, body)
        error.retry_after = retry_after
        return error

    def malformed(self, url: str, response: httpx.Response) -> Exception:
        raw = response.content.decode("utf-8", "replace")
        return ChatModelResponseError(f"chat completion is not valid JSON: {raw[:200]!r}")
