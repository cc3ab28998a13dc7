"""Knowledge bases over the Model Context Protocol: a server offering them as tools, and an
AgentScope-compatible client that mounts any MCP server's tools into a `Toolkit`."""

from archivist.mcp.server import KnowledgeSource, knowledge_server

__all__ = ["KnowledgeSource", "knowledge_server"]
