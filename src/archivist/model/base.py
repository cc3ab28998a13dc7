"""The chat-model contract the agent talks to; custom models subclass ChatModelBase."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Any, Literal, overload

from archivist._util.closable import AsyncClosable
from archivist.message import Msg
from archivist.model.delta import ChatDelta, ToolCallDelta
from archivist.model.response import ChatResponse


class ChatModelBase(AsyncClosable, ABC):
    """A chat model: `await model(messages, tools, tool_choice)` gives a ChatResponse, and
    `await model(..., stream=True)` gives an async iterator of ChatDeltas that add up to it.

    Subclasses implement `generate`; they override `generate_stream` when the backend can
    stream (the default yields the whole response as one delta).

    `tools` are OpenAI-style function schemas (`Toolkit.schemas()`); `tool_choice` is
    "auto", "none", "required" or the name of one tool. `await model.aclose()`, or
    `async with model:`, releases what the model holds, such as its HTTP connections.
    """

    model_name: str = ""

    @overload
    async def __call__(
        self,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None = ...,
        tool_choice: str | None = ...,
        stream: Literal[False] = ...,
    ) -> ChatResponse: ...

    @overload
    async def __call__(
        self,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None = ...,
        tool_choice: str | None = ...,
        *,
        stream: Literal[True],
    ) -> AsyncIterator[ChatDelta]: ...

    @overload
    async def __call__(
        self,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None = ...,
        tool_choice: str | None = ...,
        stream: bool = ...,
    ) -> ChatResponse | AsyncIterator[ChatDelta]: ...

    async def __call__(
        self,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
        stream: bool = False,
    ) -> ChatResponse | AsyncIterator[ChatDelta]:
        if stream:
            return self.generate_stream(messages, tools, tool_choice)
        return await self.generate(messages, tools, tool_choice)

    @abstractmethod
    async def generate(
        self,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
    ) -> ChatResponse:
        """One complete model turn."""

    async def generate_stream(
        self,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
    ) -> AsyncIterator[ChatDelta]:
        """The turn as deltas; by default the whole response in one delta."""
        response = await self.generate(messages, tools, tool_choice)
        yield response_as_delta(response)


def response_as_delta(response: ChatResponse) -> ChatDelta:
    """A single delta whose accumulation is `response` (block ids aside)."""
    tool_calls = [
        ToolCallDelta(
            index=i,
            id=call.id,
            name=call.name,
            arguments=json.dumps(call.input, ensure_ascii=False),
        )
        for i, call in enumerate(response.tool_calls)
    ]
    return ChatDelta(
        text=response.text,
        tool_calls=tool_calls,
        usage=response.usage,
        stop_reason=response.stop_reason,
    )
