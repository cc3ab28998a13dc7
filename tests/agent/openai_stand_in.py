"""A local stand-in of the OpenAI chat-completions API (httpx.MockTransport) and builders of
the documented wire-format bodies it serves."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from archivist.model import OpenAIChatModel
from fake_clock import FakeClock

Responder = Callable[[httpx.Request], httpx.Response]


class OpenAIStandIn:
    """Answers each request with the next queued responder and records what it received."""

    base_url = "http://openai-stand-in.test/v1"

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.clock = clock or FakeClock()
        self.responders: list[Responder] = []
        self.requests: list[httpx.Request] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if not self.responders:
            return httpx.Response(500, json={"error": {"message": "stand-in has no reply queued"}})
        return self.responders.pop(0)(request)

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    def reply_json(
        self, body: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        self.responders.append(lambda _: httpx.Response(status, json=body, headers=headers))

    def reply_raw(
        self, content: bytes, status: int = 200, content_type: str = "application/json"
    ) -> None:
        self.responders.append(
            lambda _: httpx.Response(
                status, content=content, headers={"content-type": content_type}
            )
        )

    def reply_sse(
        self, chunks: list[Any], *, done: bool = True, pieces: list[int] | None = None
    ) -> None:
        """Serve `chunks` as `data:` events; `pieces` cuts the byte stream at those offsets
        so events arrive split across network reads, as they do from a real server."""
        text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
        if done:
            text += "data: [DONE]\n\n"
        raw = text.encode()
        cuts = sorted({p for p in (pieces or []) if 0 < p < len(raw)})
        parts = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]

        async def stream() -> AsyncIterator[bytes]:
            for part in parts:
                yield part

        self.responders.append(
            lambda _: httpx.Response(
                200, content=stream(), headers={"content-type": "text/event-stream"}
            )
        )

    def model(self, **kwargs: Any) -> OpenAIChatModel:
        kwargs.setdefault("api_key", "sk-stand-in")
        kwargs.setdefault("base_url", self.base_url)
        kwargs.setdefault("retry_base_delay", 0.0)
        kwargs.setdefault("clock", self.clock)
        return OpenAIChatModel(
            kwargs.pop("model", "gpt-test"),
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(self.handle)),
            **kwargs,
        )


def completion(
    message: dict[str, Any], finish_reason: str = "stop", usage: dict[str, int] | None = None
) -> dict[str, Any]:
    """A `chat.completion` body as the API documents it."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", **message},
                "finish_reason": finish_reason,
            }
        ],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """A `chat.completion.chunk` body with one choice."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def usage_chunk(prompt: int, completion_tokens: int) -> dict[str, Any]:
    """The last chunk sent with `stream_options.include_usage`: no choices, just usage."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
        },
    }
