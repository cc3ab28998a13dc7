"""The `archivist` command line."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from archivist.cli.ask_command import add_ask_command
from archivist.cli.chunk_command import add_chunk_command
from archivist.cli.docs_command import add_docs_commands
from archivist.cli.eval_command import add_eval_command
from archivist.cli.index_command import add_index_command
from archivist.cli.keys_command import add_keys_command
from archivist.cli.search_command import add_search_command
from archivist.cli.serve_command import add_serve_command
from archivist.cli.session import CLIError


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="archivist", description="Index files and search them for AI agents."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    add_index_command(commands)
    add_search_command(commands)
    add_docs_commands(commands)
    add_ask_command(commands)
    add_eval_command(commands)
    add_chunk_command(commands)
    add_serve_command(commands)
    add_keys_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        code: int = asyncio.run(args.handler(args))
    except KeyboardInterrupt:
        return 130
    except (CLIError, ValueError, OSError) as exc:
        print(f"archivist: error: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
