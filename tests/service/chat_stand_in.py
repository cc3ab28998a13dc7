"""A local stand-in for an OpenAI-compatible chat server on 127.0.0.1, for the faults a real
server cannot be made to produce on demand: 429, a stall, a stream cut mid-answer. Each
request takes the next queued `Reply`; what it received is kept in `requests`."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from service_helpers import free_port
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass
class Reply:
    """What the stand-in answers one request with."""

    pieces: list[str] = field(default_factory=list)
    """Text deltas, one SSE chunk each."""
    tool_call: dict[str, Any] | None = None
    """`{"name", "arguments"}`: answer with one tool call instead of text."""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds between chunks (headers go out at once, as llama.cpp sends them)."""
    cut_after: int | None = None
    """Drop the connection after this many chunks."""
    raw: str | None = None
    """Send this as an SSE chunk's data instead of the pieces (a broken answer)."""


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {
        "id": "chatcmpl-stand-in",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "stand-in",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


class ChatStandIn:
    """The server; `replies` is consumed in order, `requests` holds the JSON bodies received,
    `cancelled` counts streams the client walked away from."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.cancelled = 0
        self.port = free_port()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _completions(self, request: Request) -> Response:
        self.requests.append(await request.json())
        reply = self.replies.pop(0) if self.replies else Reply(status=500)
        if reply.status != 200:
            return JSONResponse(
                {"error": {"message": f"stand-in status {reply.status}", "type": "stand_in"}},
                status_code=reply.status,
                headers=reply.headers,
            )
        return StreamingResponse(self._stream(reply), media_type="text/event-stream")

    async def _stream(self, reply: Reply) -> AsyncIterator[str]:
        chunks: list[str] = [_chunk({"role": "assistant", "content": ""})]
        if reply.tool_call is not None:
            call = {
                "index": 0,
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": reply.tool_call["name"],
                    "arguments": json.dumps(reply.tool_call["arguments"]),
                },
            }
            chunks.append(_chunk({"tool_calls": [call]}))
            chunks.append(_chunk({}, "tool_calls"))
        elif reply.raw is not None:
            chunks.append(f"data: {reply.raw}\n\n")
        else:
            chunks.extend(_chunk({"content": piece}) for piece in reply.pieces)
            chunks.append(_chunk({}, "stop"))
        chunks.append("data: [DONE]\n\n")
        try:
            for sent, chunk in enumerate(chunks):
                if reply.cut_after is not None and sent == reply.cut_after:
                    raise ConnectionAbortedError("stand-in cuts the stream")
                if reply.delay:
                    await asyncio.sleep(reply.delay)
                yield chunk
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    def start(self) -> None:
        app = Starlette(routes=[Route("/v1/chat/completions", self._completions, methods=["POST"])])
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="critical")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the chat stand-in did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop listening: the port refuses connections until `start()` again."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(30)
            self._server = None


@contextmanager
def chat_stand_in() -> Iterator[ChatStandIn]:
    stand_in = ChatStandIn()
    stand_in.start()
    try:
        yield stand_in
    finally:
        stand_in.stop()
