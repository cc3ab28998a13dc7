"""OpenAI-compatible chat completions over httpx: OpenAI, DashScope compatible mode, vLLM,
Ollama, llama.cpp server and anything else that speaks `POST {base_url}/chat/completions`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from httpx_sse import EventSource

from archivist._http_retry import announce_retry, should_retry
from archivist.credential import OpenAICredential
from archivist.message import Msg
from archivist.model.base import ChatModelBase, response_as_delta
from archivist.model.delta import ChatDelta
from archivist.model.errors import ChatModelAPIError, ChatModelError, ChatModelResponseError
from archivist.model.openai_formatter import OpenAIChatFormatter
from archivist.model.openai_parser import (
    api_error_from_body,
    decode_json,
    parse_chunk,
    parse_completion,
)
from archivist.model.response import ChatResponse
from archivist.model.retry import RetryPolicy

# Indirection so tests can observe backoff without waiting.
_sleep = asyncio.sleep


class OpenAIChatModel(ChatModelBase):
    """A chat model behind an OpenAI-compatible endpoint.

    `api_key` / `base_url` / `organization` given here win over the `credential`'s; an
    OpenAICredential fills the rest (key from `OPENAI_API_KEY`, none at all being fine for
    local servers; URL from `OPENAI_BASE_URL`, else the OpenAI API).

    408/409/429/5xx and connection failures are retried up to `max_retries` times with
    exponential backoff, waiting what the server asks in `Retry-After` / `retry-after-ms`
    when it says; other errors raise ChatModelAPIError at once with the provider's message.
    `generate_kwargs` (temperature, max_tokens, ...) go into every request body. Without
    `http_client`, each call opens its own client, so one model object is safe to use from
    several event loops.
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
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.model_name = model
        self.credential = OpenAICredential(
            api_key=api_key or (credential.api_key if credential else None),
            base_url=base_url or (credential.base_url if credential else None),
            organization=organization or (credential.organization if credential else None),
        )
        self.base_url = self.credential.base_url
        self._http_client = http_client
        self.retry_policy = RetryPolicy(max_retries, retry_base_delay, retry_max_delay)
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
        async with self._client() as client:
            response = await self._open(client, body)
            try:
                raw = await response.aread()
            finally:
                await response.aclose()
        return parse_completion(decode_json(raw.decode("utf-8", "replace"), "chat completion"))

    async def generate_stream(
        self,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
    ) -> AsyncIterator[ChatDelta]:
        body = self.request_body(messages, tools, tool_choice, stream=True)
        async with self._client() as client:
            response = await self._open(client, body)
            try:
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    # A server that ignored `stream` and answered in one piece.
                    raw = (await response.aread()).decode("utf-8", "replace")
                    yield response_as_delta(parse_completion(decode_json(raw, "chat completion")))
                    return
                finished = False
                async for event in EventSource(response).aiter_sse():
                    if not event.data:
                        continue  # an event with only a name, id or retry carries no chunk
                    if event.data.strip() == "[DONE]":
                        finished = True
                        break
                    delta = parse_chunk(decode_json(event.data, "stream chunk"))
                    finished = finished or delta.stop_reason is not None
                    yield delta
                if not finished:
                    raise ChatModelResponseError(
                        "stream ended before [DONE] or a finish_reason: the response is incomplete"
                    )
            finally:
                await response.aclose()

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

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._http_client is not None:
            yield self._http_client
            return
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            yield client

    async def _open(self, client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
        """Send the request, retrying as the policy says; the response is open, status 2xx."""
        url = f"{self.base_url}/chat/completions"
        policy = self.retry_policy
        attempt = 0
        while True:
            request = client.build_request(
                "POST", url, json=body, headers=self._headers(stream=bool(body.get("stream")))
            )
            try:
                response = await client.send(request, stream=True)
            except httpx.TransportError as exc:
                if attempt >= policy.max_retries:
                    raise ChatModelError(
                        f"could not reach {url} after {attempt + 1} attempt(s): {exc!r}"
                    ) from exc
                delay = policy.delay(attempt)
                announce_retry(url, repr(exc), delay, attempt, policy.max_retries)
                await _sleep(delay)
                attempt += 1
                continue
            if response.status_code < 400:
                return response
            error = await _read_error(response)
            if not should_retry(response.status_code, error.code) or attempt >= policy.max_retries:
                raise error
            delay = policy.delay(attempt, response.headers)
            announce_retry(url, error, delay, attempt, policy.max_retries)
            await _sleep(delay)
            attempt += 1


async def _read_error(response: httpx.Response) -> ChatModelAPIError:
    try:
        raw = (await response.aread()).decode("utf-8", "replace")
    finally:
        await response.aclose()
    try:
        body: Any = decode_json(raw, "error body")
    except ChatModelResponseError:
        body = raw.strip()
    return api_error_from_body(response.status_code, body)
