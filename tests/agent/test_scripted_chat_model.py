"""ScriptedChatModel: replays turns, records calls, streams like a provider."""

from __future__ import annotations

import pytest

from archivist.message import Msg, TextBlock, ToolUseBlock
from archivist.model import ChatModelError, ChatResponse, ChatUsage, ScriptedChatModel, accumulate

TURN = ChatResponse(
    content=[
        TextBlock(text="Let me look that up for you."),
        ToolUseBlock(id="c1", name="search", input={"query": "ünïcode", "top_k": 3}),
        ToolUseBlock(id="c2", name="clock", input={}),
    ],
    usage=ChatUsage(input_tokens=7, output_tokens=9),
    stop_reason="tool_calls",
)


async def test_streamed_turn_accumulates_to_the_scripted_response() -> None:
    model = ScriptedChatModel([TURN])
    deltas = [d async for d in await model([Msg("u", "q", "user")], stream=True)]

    rebuilt = accumulate(deltas)

    assert len([d for d in deltas if d.text]) > 1
    assert rebuilt.text == TURN.text
    assert [(c.id, c.name, c.input) for c in rebuilt.tool_calls] == [
        (c.id, c.name, c.input) for c in TURN.tool_calls
    ]
    assert (rebuilt.usage, rebuilt.stop_reason) == (TURN.usage, TURN.stop_reason)


async def test_calls_are_recorded_and_running_out_is_an_error() -> None:
    model = ScriptedChatModel([TURN])
    history = [Msg("u", "q", "user")]
    assert await model(history, tools=[{"type": "function"}], tool_choice="auto") is TURN
    history.append(Msg("u", "later", "user"))

    with pytest.raises(ChatModelError, match="1 scripted turn"):
        await model(history)

    first, second = model.calls
    assert len(first.messages) == 1  # a snapshot, not the caller's list
    assert (first.tools, first.tool_choice, first.stream) == ([{"type": "function"}], "auto", False)
    assert len(second.messages) == 2
