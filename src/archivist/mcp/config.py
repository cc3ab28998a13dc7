"""How to reach an MCP server: a command to start (stdio) or a URL (HTTP).

The fields, their defaults and the `type` discriminators are AgentScope 2.x's, so configs
written for `agentscope.mcp` (or saved by it as JSON) load unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class StdioMCPConfig(BaseModel):
    """A server started as a child process and spoken to over its stdin/stdout."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["stdio_mcp"] = "stdio_mcp"
    command: str = Field(min_length=1, description="The executable that starts the server.")
    args: list[str] | None = Field(default=None, description="Its command-line arguments.")
    env: dict[str, str] | None = Field(
        default=None,
        description="Its environment (default: the SDK's short list of safe variables, "
        "e.g. PATH and HOME, not the whole environment of this process).",
    )
    cwd: str | Path | None = Field(default=None, description="Its working directory.")
    encoding_error_handler: Literal["strict", "ignore", "replace"] = Field(
        default="strict", description="What to do with bytes of its output that are not UTF-8."
    )


class HttpMCPConfig(BaseModel):
    """A server at a URL: Streamable HTTP, or the older SSE transport for URLs whose path ends
    in `/sse` or `/messages/`."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["http_mcp"] = "http_mcp"
    url: str = Field(min_length=1, description="The server's endpoint, e.g. http://host/mcp.")
    headers: dict[str, str] | None = Field(
        default=None, description="Sent with every request, e.g. Authorization: Bearer KEY."
    )
    timeout: float | None = Field(
        default=30.0, gt=0, description="Seconds an HTTP request may take (None: no limit)."
    )
