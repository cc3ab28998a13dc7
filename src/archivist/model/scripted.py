"""A chat model that replays a script: for tests, demos and offline examples."""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from archivist.message import Msg
from archivist.model.base import ChatModelBase
from archivist.model.delta import ChatDelta, ToolCallDelta
from archivist.model.errors import ChatModelError
from archivist.model.response import ChatResponse

ScriptedTurn = Callable[
    [list[Msg], list[dict[str, Any]] | None], ChatResponse | Awaitable[ChatResponse]
]


@dataclass(frozen=True)
class ScriptedCall:
    """What the model was called with (a snapshot of the message list)."""

    messages: list[Msg]
    tools: list[dict[str, Any]] | None
    tool_choice: str | None
    stream: bool


class ScriptedChatModel(ChatModelBase):
    """Answers call N with the N-th scripted turn and records every call in `calls`.

    A turn is a ChatResponse, or a callable (sync or async) given the messages and tools
    of the call that returns one, so a script can react to what the agent sent. Streaming
    splits the text into word-sized deltas and each call's arguments into two pieces, as a
    real provider would. Running out of turns raises ChatModelError.
    """

    def __init__(
        self, responses: Sequence[ChatResponse | ScriptedTurn], model_name: str = "scripted"
    ) -> None:
        self.responses = list(responses)
        self.calls: list[ScriptedCall] = []
        self.model_name = model_name

    async def generate(
        self,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
    ) -> ChatResponse:
        return await self._next(messages, tools, tool_choice, stream=False)

    async def generate_stream(
        self,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
    ) -> AsyncIterator[ChatDelta]:
        response = await self._next(messages, tools, tool_choice, stream=True)
        for piece in _split_words(response.text):
            yield ChatDelta(text=piece)
        for index, call in enumerate(response.tool_calls):
            arguments = json.dumps(call.input, ensure_ascii=False)
            middle = len(arguments) // 2
            yield ChatDelta(tool_calls=[ToolCallDelta(index=index, id=call.id, name=call.name)])
            yield ChatDelta(tool_calls=[ToolCallDelta(index=index, arguments=arguments[:middle])])
            yield ChatDelta(tool_calls=[ToolCallDelta(index=index, arguments=arguments[middle:])])
        yield ChatDelta(usage=response.usage, stop_reason=response.stop_reason)

    async def _next(
        self,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
        *,
        stream: bool,
    ) -> ChatResponse:
        turn_number = len(self.calls)
        self.calls.append(ScriptedCall(list(messages), tools, tool_choice, stream))
        if turn_number >= len(self.responses):
            raise ChatModelError(
                f"ScriptedChatModel has {len(self.responses)} scripted turn(s) "
                f"and was called a {turn_number + 1}th time"
            )
        turn = self.responses[turn_number]
        if isinstance(turn, ChatResponse):
            return turn
        result = turn(list(messages), tools)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, ChatResponse):
            raise ChatModelError(
                f"scripted turn {turn_number} returned {type(result).__name__}, not ChatResponse"
            )
        return result


def _split_words(text: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for i, char in enumerate(text):
        if char == " " and i > start:
            pieces.append(text[start:i])
            start = i
    if start < len(text):
        pieces.append(text[start:])
    return pieces
