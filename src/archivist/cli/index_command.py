"""`archivist index PATH...`: parse, chunk, embed and store files, incrementally."""

from __future__ import annotations

import argparse
from typing import Any

from archivist.cli.arguments import (
    add_chunking_arguments,
    add_common_arguments,
    add_json_argument,
    add_timeout_argument,
    non_negative_seconds,
)
from archivist.cli.ocr_options import add_ocr_arguments
from archivist.cli.session import DEFAULT_EMBEDDING_TIMEOUT
from archivist.embedding.registry import DEFAULT_EMBEDDING_MODEL, list_embedding_models


def add_index_command(commands: Any) -> None:
    """Register the `index` sub-command."""
    cmd = commands.add_parser("index", help="index files and folders into a knowledge base")
    cmd.add_argument("paths", nargs="+", metavar="PATH")
    add_common_arguments(cmd)
    add_chunking_arguments(cmd, from_kb=True)
    add_json_argument(cmd)
    cmd.add_argument(
        "--embedding",
        default=None,
        help=f"embedding model for a new KB: a local name ({DEFAULT_EMBEDDING_MODEL}; "
        f"known: {', '.join(list_embedding_models())}), dashscope:MODEL[:DIMS] or "
        "openai:MODEL:DIMS (default: the KB's own)",
    )
    cmd.add_argument(
        "--rebuild",
        action="store_true",
        help="empty the knowledge base (every tenant) and index PATHs with new "
        "--chunk-size/--overlap/--embedding",
    )
    cmd.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="confirm --rebuild without asking (needed when there is no terminal to ask on)",
    )
    cmd.add_argument("--prune", action="store_true", help="drop documents whose files are gone")
    cmd.add_argument(
        "--watch",
        action="store_true",
        help="keep running: index the folders, then what is added, changed, renamed or "
        "deleted in them, one pass per burst of changes, until Ctrl-C",
    )
    cmd.add_argument(
        "--keep-stale",
        action="store_true",
        help="keep the old version of a file that is now empty or fails to parse "
        "(default: remove it, so the index holds only what the files say now)",
    )
    cmd.add_argument(
        "--progress",
        type=non_negative_seconds,
        default=10.0,
        metavar="SECONDS",
        help="when stderr is not a terminal (a pipe, a CI log), print a progress line every "
        "SECONDS (0: never)",
    )
    add_ocr_arguments(cmd)
    add_timeout_argument(cmd, DEFAULT_EMBEDDING_TIMEOUT, "embedding provider")
    cmd.set_defaults(handler=run_index)


async def run_index(args: argparse.Namespace) -> int:
    """Index the files; print a summary; exit 1 if any file failed. With --watch, keep
    indexing what changes until interrupted."""
    if args.watch:
        from archivist.cli.index_watch import run_watch  # loaded when watching runs

        return await run_watch(args)
    from archivist.cli.index_run import run_index as run  # loaded when indexing runs

    return await run(args)
