"""`archivist mcp`: the CLI's knowledge bases as MCP tools, served over stdio.

An MCP client (an IDE, a desktop assistant, an AgentScope agent) starts this command and talks
to it over stdin/stdout. Each knowledge base is opened only while a search runs, so
`archivist index` can update it while the server is up, and knowledge bases indexed later
appear in the next tool listing.
"""

from __future__ import annotations

import argparse
from typing import Any

from archivist.cli.arguments import add_store_arguments


def add_mcp_command(commands: Any) -> None:
    """Register the `mcp` sub-command."""
    cmd = commands.add_parser(
        "mcp",
        help="serve knowledge bases to MCP clients over stdio",
        description="Serve knowledge bases as MCP tools (search_knowledge, "
        "list_knowledge_bases) over stdin/stdout, for an MCP client to start.",
    )
    cmd.add_argument(
        "--kb",
        action="append",
        default=None,
        metavar="NAME",
        help="a knowledge base to serve; repeat for several (default: every one in the store)",
    )
    add_store_arguments(cmd, searches_only=True)
    cmd.set_defaults(handler=run_mcp)


async def run_mcp(args: argparse.Namespace) -> int:
    """Serve the knowledge bases over stdio until the client closes the connection."""
    from archivist.cli.mcp_run import run_mcp as run  # loaded when the server runs

    return await run(args)
