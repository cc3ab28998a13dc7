"""`archivist.mcp.MCPClient`: AgentScope's client interface; an agent calls our own MCP server
(`archivist mcp` over stdio) through tools mounted in a `Toolkit`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from archivist.agent import Agent
from archivist.mcp import HttpMCPConfig, MCPClient, MCPToolError, StdioMCPConfig
from archivist.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from archivist.model import ChatResponse, ChatUsage, ScriptedChatModel
from archivist.tool import Toolkit


def stdio_config(home: Path, *args: str) -> StdioMCPConfig:
    return StdioMCPConfig(
        command=sys.executable,
        args=["-m", "archivist", "mcp", *args],
        env={"ARCHIVIST_HOME": str(home), "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    )


def turn(*content: TextBlock | ToolUseBlock) -> ChatResponse:
    stop = "tool_calls" if any(isinstance(b, ToolUseBlock) for b in content) else "stop"
    return ChatResponse(
        content=list(content), usage=ChatUsage(input_tokens=1, output_tokens=1), stop_reason=stop
    )


async def test_an_agent_calls_our_mcp_server_through_mounted_tools(home: Path) -> None:
    client = MCPClient(name="kb", is_stateful=True, mcp_config=stdio_config(home, "--kb", "pets"))
    await client.connect()
    try:
        assert client.is_connected
        tools = await client.list_tools()
        toolkit = Toolkit(tools=tools)
        assert toolkit.names == ["mcp__kb__search_knowledge", "mcp__kb__list_knowledge_bases"]
        [schema] = [
            s for s in toolkit.schemas() if s["function"]["name"].endswith("search_knowledge")
        ]
        assert "- pets: " in schema["function"]["description"]
        search = {"query": "how long does a cat sleep", "top_k": 1}
        model = ScriptedChatModel(
            [
                turn(ToolUseBlock(id="c1", name="mcp__kb__search_knowledge", input=search)),
                turn(TextBlock(text="Sixteen hours [1].")),
            ]
        )
        agent = Agent("helper", "Answer from the knowledge base.", model, toolkit=toolkit)
        answer = await agent.reply(Msg("user", "How long does a cat sleep?", "user"))
    finally:
        await client.close()
    assert not client.is_connected
    assert answer.get_text_content() == "Sixteen hours [1]."
    [result] = model.calls[1].messages[-1].get_blocks(ToolResultBlock)
    assert not result.is_error
    text = "".join(b.text for b in result.output if isinstance(b, TextBlock))
    assert "[1] cats.md, Cats, chunk 0 (knowledge base: pets" in text
    assert "sixteen hours" in text


async def test_filters_errors_and_the_lifecycle(home: Path) -> None:
    client = MCPClient(
        name="kb",
        is_stateful=True,
        mcp_config=stdio_config(home),
        enable_tools=["search_knowledge"],
    )
    with pytest.raises(RuntimeError, match="not connected"):
        await client.list_tools()
    await client.connect()
    try:
        with pytest.raises(RuntimeError, match="already connected"):
            await client.connect()
        assert [t.name for t in await client.list_tools()] == ["mcp__kb__search_knowledge"]
        listing = await client.get_tool("list_knowledge_bases")  # filters apply to listings only
        assert "pets" in (await listing())[0].text
        tool = await client.get_tool("search_knowledge")
        with pytest.raises(MCPToolError, match="top_k"):
            await tool(query="cats", top_k=0)
        toolkit = Toolkit(tools=[tool])
        result = await toolkit.call(
            ToolUseBlock(
                id="x", name=tool.name, input={"query": "cats", "knowledge_bases": ["nope"]}
            )
        )
        assert result.is_error and "nope" in str(result.output)
        with pytest.raises(ValueError, match="no tool 'missing'"):
            await client.get_tool("missing")
    finally:
        await client.close()
    with pytest.raises(RuntimeError, match="not connected"):
        await client.close()


async def test_a_server_that_fails_to_start_raises_on_connect(tmp_path: Path) -> None:
    client = MCPClient(
        name="broken",
        is_stateful=True,
        mcp_config=StdioMCPConfig(command=sys.executable, args=["-c", "import sys; sys.exit(3)"]),
    )
    with pytest.raises(BaseException):  # noqa: B017 - the SDK reports a dead server its own way
        await client.connect()
    assert not client.is_connected


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"name": "my kb"}, "letters, digits"),
        ({"is_stateful": False}, "is_stateful=True"),
        ({"enable_tools": ["a"], "disable_tools": ["a"]}, "both enabled and disabled"),
        ({"stream_progress": True}, "final results"),
        ({"execution_timeout": 0}, "greater than 0"),
    ],
)
def test_bad_construction_is_a_validation_error(arguments: dict[str, Any], problem: str) -> None:
    config = {"name": "kb", "is_stateful": True, "mcp_config": StdioMCPConfig(command="x")}
    with pytest.raises(ValidationError, match=problem):
        MCPClient(**{**config, **arguments})


def test_configs_load_agentscopes_json() -> None:
    stdio = MCPClient.model_validate(
        {
            "name": "fs",
            "is_stateful": True,
            "mcp_config": {"type": "stdio_mcp", "command": "server", "args": ["--x"]},
        }
    )
    http = MCPClient.model_validate(
        {
            "name": "web",
            "is_stateful": False,
            "mcp_config": {
                "type": "http_mcp",
                "url": "http://127.0.0.1:1/mcp",
                "headers": {"A": "b"},
            },
        }
    )
    assert isinstance(stdio.mcp_config, StdioMCPConfig) and stdio.mcp_config.args == ["--x"]
    assert isinstance(http.mcp_config, HttpMCPConfig) and http.mcp_config.timeout == 30.0
