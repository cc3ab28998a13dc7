"""The whole loop: Agent + Toolkit + OpenAIChatModel talking to the local stand-in."""

from __future__ import annotations

import json

from openai_stand_in import OpenAIStandIn, chunk, completion, usage_chunk

from archivist.agent import Agent
from archivist.event import ReplyEnd, TextDelta, ToolResult
from archivist.message import Msg
from archivist.tool import Toolkit


def get_weather(city: str) -> str:
    """Current weather.

    Args:
        city: City name.
    """
    return {"Paris": "sunny", "Lyon": "rain"}[city]


async def test_agent_runs_parallel_tools_over_the_wire_local_stand_in(
    stand_in: OpenAIStandIn,
) -> None:
    stand_in.reply_json(
        completion(
            {
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_p",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_x",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                    },
                ],
            },
            finish_reason="tool_calls",
        )
    )
    stand_in.reply_json(completion({"content": "Paris is sunny; Oslo is unknown."}))
    agent = Agent("weather", "Answer briefly.", stand_in.model(), toolkit=Toolkit([get_weather]))

    answer = await agent.reply(Msg("user", "Weather in Paris and Oslo?", "user"))

    assert answer.get_text_content() == "Paris is sunny; Oslo is unknown."
    second = stand_in.bodies()[1]
    assert second["tools"][0]["function"]["name"] == "get_weather"
    assert [m["role"] for m in second["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
    ]
    paris, oslo = second["messages"][3:]
    assert paris == {"role": "tool", "tool_call_id": "call_p", "content": "sunny"}
    assert oslo["tool_call_id"] == "call_x"
    assert oslo["content"].startswith("Error: tool 'get_weather' failed: KeyError")


async def test_agent_streams_text_and_tool_calls_over_the_wire_local_stand_in(
    stand_in: OpenAIStandIn,
) -> None:
    stand_in.reply_sse(
        [
            chunk({"role": "assistant", "content": None}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_l",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"ci'},
                        }
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Lyon"}'}}]}),
            chunk({}, finish_reason="tool_calls"),
            usage_chunk(30, 10),
        ],
        pieces=[50, 51, 52, 400],
    )
    stand_in.reply_sse(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Rain "}),
            chunk({"content": "in Lyon."}),
            chunk({}, finish_reason="stop"),
            usage_chunk(50, 4),
        ]
    )
    agent = Agent("weather", "", stand_in.model(), toolkit=Toolkit([get_weather]))

    events = [e async for e in agent.reply_stream(Msg("user", "Lyon?", "user"))]

    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["Rain ", "in Lyon."]
    (result,) = [e.result for e in events if isinstance(e, ToolResult)]
    assert (result.id, result.output) == ("call_l", "rain")
    end = events[-1]
    assert isinstance(end, ReplyEnd)
    assert end.msg.get_text_content() == "Rain in Lyon."
    assert end.usage is not None and (end.usage.input_tokens, end.usage.output_tokens) == (80, 14)
    sent = stand_in.bodies()[1]["messages"]
    assert sent[1]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": json.dumps({"city": "Lyon"}),
    }
