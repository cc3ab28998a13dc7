"""Knowledge bases over the Model Context Protocol: a server offering them as tools, and an
AgentScope-compatible client that mounts any MCP server's tools into a `Toolkit`."""

from archivist.mcp.client import MCPClient, MCPTool, MCPToolError
from archivist.mcp.config import HttpMCPConfig, StdioMCPConfig
from archivist.mcp.server import KnowledgeSource, knowledge_server

__all__ = [
    "HttpMCPConfig",
    "KnowledgeSource",
    "MCPClient",
    "MCPTool",
    "MCPToolError",
    "StdioMCPConfig",
    "knowledge_server",
]
