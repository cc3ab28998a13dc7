"""`MCPClient`: the tools of any MCP server as archivist tools, with AgentScope 2.x's interface.

AgentScope code that builds `MCPClient(name=..., is_stateful=..., mcp_config=...)`, connects
it and puts `await client.list_tools()` into a `Toolkit` ports by changing its imports. The
tools are `ToolBase`s named `mcp__{client name}__{tool name}`, as AgentScope names them, so an
`Agent`'s model sees the same names.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx2
from mcp import Client, StdioServerParameters, stdio_client
from mcp import types as mcp_types
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import BaseModel, Field, PrivateAttr, field_validator, model_validator

from archivist.errors import ArchivistError
from archivist.mcp.config import HttpMCPConfig, StdioMCPConfig
from archivist.message import Base64Source, DataBlock, TextBlock
from archivist.tool import ToolBase

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_-]")


class MCPToolError(ArchivistError, RuntimeError):
    """The MCP server answered a tool call with an error result; the message is its text."""


class MCPClient(BaseModel):
    """A connection to one MCP server and the tools it offers.

    Stateful (`is_stateful=True`, required for stdio): `await connect()` once, every call
    shares the one session, `await close()` at the end. Stateless (HTTP only): no connect;
    each listing and each tool call opens and closes its own session.
    `enable_tools` / `disable_tools` filter `list_tools()` by the server's tool names;
    `execution_timeout` bounds each tool call in seconds.
    """

    name: str = Field(description="Names the server in its tools' names: letters, digits, _ -.")
    is_stateful: bool
    mcp_config: StdioMCPConfig | HttpMCPConfig = Field(discriminator="type")
    enable_tools: list[str] | None = None
    disable_tools: list[str] | None = None
    execution_timeout: float | None = Field(default=None, gt=0)
    stream_progress: bool = False
    """Accepted for AgentScope's constructor; only False: tools return their final result."""

    _client: Client | None = PrivateAttr(default=None)
    _holder: asyncio.Task[None] | None = PrivateAttr(default=None)
    _closing: asyncio.Event | None = PrivateAttr(default=None)
    _tools: list[mcp_types.Tool] | None = PrivateAttr(default=None)

    @field_validator("name")
    @classmethod
    def _tool_name_safe(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(
                f"MCP client name {value!r} may hold only letters, digits, '_' and '-' "
                "(it becomes part of tool names, which chat APIs restrict)"
            )
        return value

    @field_validator("stream_progress")
    @classmethod
    def _final_results_only(cls, value: bool) -> bool:
        if value:
            raise ValueError("stream_progress=True is not supported: tools return final results")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> MCPClient:
        if isinstance(self.mcp_config, StdioMCPConfig) and not self.is_stateful:
            raise ValueError("a stdio MCP server needs is_stateful=True (one process, one session)")
        both = set(self.enable_tools or []) & set(self.disable_tools or [])
        if both:
            raise ValueError(f"tools both enabled and disabled: {sorted(both)}")
        return self

    @property
    def is_connected(self) -> bool:
        """Whether a stateful client holds an open session."""
        return self._client is not None

    def _transport(self) -> AbstractAsyncContextManager[Any]:
        config = self.mcp_config
        if isinstance(config, StdioMCPConfig):
            return stdio_client(
                StdioServerParameters(
                    command=config.command,
                    args=list(config.args or []),
                    env=config.env,
                    cwd=config.cwd,
                    encoding_error_handler=config.encoding_error_handler,
                )
            )
        if urlsplit(config.url).path.endswith(("/sse", "/messages/")):
            return sse_client(config.url, headers=config.headers, timeout=config.timeout or 300.0)
        return _streamable_http(config)

    def _session(self) -> Client:
        return Client(self._transport(), mode="auto")

    async def connect(self) -> None:
        """Open the session of a stateful client (a stateless one has nothing to open)."""
        if not self.is_stateful:
            return
        if self._client is not None:
            raise RuntimeError(f"MCP client {self.name!r} is already connected; close() first")
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        closing = asyncio.Event()
        holder = asyncio.create_task(self._hold(ready, closing))
        try:
            with _first_error():
                client = await asyncio.shield(ready)
        except BaseException:
            holder.cancel()
            await asyncio.gather(holder, return_exceptions=True)
            raise
        self._client, self._holder, self._closing = client, holder, closing

    async def _hold(self, ready: asyncio.Future[Client], closing: asyncio.Event) -> None:
        """Enter and leave the SDK client in one task, as its cancel scopes require."""
        try:
            async with self._session() as client:
                ready.set_result(client)
                await closing.wait()
        except BaseException as exc:
            if ready.done():
                raise
            ready.set_exception(exc)

    async def close(self, ignore_errors: bool = True) -> None:
        """Close the session of a stateful client; errors while closing are dropped unless
        `ignore_errors=False`."""
        if not self.is_stateful:
            return
        if self._client is None or self._holder is None or self._closing is None:
            raise RuntimeError(f"MCP client {self.name!r} is not connected; connect() first")
        holder, self._client, self._holder = self._holder, None, None
        self._closing.set()
        self._closing = None
        try:
            await holder
        except Exception:
            if not ignore_errors:
                raise

    @asynccontextmanager
    async def _connected(self) -> AsyncIterator[Client]:
        """The open session (stateful) or a session for this one operation (stateless)."""
        if self.is_stateful:
            if self._client is None:
                raise RuntimeError(f"MCP client {self.name!r} is not connected; connect() first")
            yield self._client
            return
        with _first_error():
            async with self._session() as client:
                yield client

    async def list_raw_tools(self) -> list[mcp_types.Tool]:
        """The server's tool descriptions as the SDK gives them, after the enable/disable
        filters."""
        async with self._connected() as client:
            self._tools = list((await client.list_tools(cache_mode="refresh")).tools)
        return [
            tool
            for tool in self._tools
            if (self.enable_tools is None or tool.name in self.enable_tools)
            and tool.name not in (self.disable_tools or [])
        ]

    async def list_tools(self) -> list[ToolBase]:
        """The server's tools, filtered, as tools to register in a `Toolkit`."""
        return [MCPTool(self, tool) for tool in await self.list_raw_tools()]

    async def get_tool(self, name: str) -> MCPTool:
        """The server's tool `name` (by its name on the server), filters aside."""
        if self._tools is None:
            await self.list_raw_tools()
        for tool in self._tools or []:
            if tool.name == name:
                return MCPTool(self, tool)
        raise ValueError(f"MCP server {self.name!r} has no tool {name!r}")

    async def call_raw(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call tool `name` on the server; the SDK's result, errors included."""
        async with self._connected() as client:
            return await client.call_tool(
                name, arguments, read_timeout_seconds=self.execution_timeout
            )


@contextmanager
def _first_error() -> Iterator[None]:
    """The one error inside the SDK's task-group error, raised as itself (e.g. a refused
    connection or an HTTP 401), so callers can catch it by its type."""
    try:
        yield
    except BaseExceptionGroup as group:
        leaves: list[BaseException] = []
        pending: list[BaseException] = [group]
        while pending:
            error = pending.pop()
            if isinstance(error, BaseExceptionGroup):
                pending.extend(error.exceptions)
            else:
                leaves.append(error)
        if len(leaves) == 1:
            raise leaves[0] from group
        raise


@asynccontextmanager
async def _streamable_http(config: HttpMCPConfig) -> AsyncIterator[Any]:
    timeout = httpx2.Timeout(config.timeout) if config.timeout is not None else None
    async with (
        create_mcp_http_client(headers=config.headers, timeout=timeout) as http,
        streamable_http_client(config.url, http_client=http) as transport,
    ):
        yield transport


class MCPTool(ToolBase):
    """One tool of an MCP server; calling it calls the server. An error result raises
    `MCPToolError`, which a `Toolkit` hands the model as an error."""

    def __init__(self, client: MCPClient, tool: mcp_types.Tool) -> None:
        self.client = client
        self.mcp_name = tool.name
        self.name = f"mcp__{client.name}__{_NOT_IN_NAME.sub('x', tool.name)}"
        self.description = tool.description or ""
        schema = dict(tool.input_schema or {})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        self.parameters = schema

    async def __call__(self, **kwargs: Any) -> list[TextBlock | DataBlock]:
        result = await self.client.call_raw(self.mcp_name, kwargs)
        blocks = content_blocks(result)
        if result.is_error:
            text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
            raise MCPToolError(text or f"MCP tool {self.mcp_name!r} failed")
        return blocks


def content_blocks(result: mcp_types.CallToolResult) -> list[TextBlock | DataBlock]:
    """An MCP tool result as archivist blocks: text as text, images and audio as data,
    embedded text resources as text, links as text; structured content as JSON text when
    nothing else is text."""
    blocks: list[TextBlock | DataBlock] = []
    for item in result.content:
        if isinstance(item, mcp_types.TextContent):
            blocks.append(TextBlock(text=item.text))
        elif isinstance(item, mcp_types.ImageContent | mcp_types.AudioContent):
            blocks.append(DataBlock(source=Base64Source(data=item.data, media_type=item.mime_type)))
        elif isinstance(item, mcp_types.EmbeddedResource):
            resource = item.resource
            if isinstance(resource, mcp_types.TextResourceContents):
                blocks.append(TextBlock(text=resource.text))
            else:
                media_type = resource.mime_type or "application/octet-stream"
                blocks.append(
                    DataBlock(source=Base64Source(data=resource.blob, media_type=media_type))
                )
        elif isinstance(item, mcp_types.ResourceLink):
            blocks.append(TextBlock(text=f"{item.name}: {item.uri}"))
    if result.structured_content is not None and not any(isinstance(b, TextBlock) for b in blocks):
        blocks.append(TextBlock(text=json.dumps(result.structured_content, ensure_ascii=False)))
    return blocks
