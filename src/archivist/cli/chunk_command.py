"""`archivist chunk PATH...`: parse and chunk files and print the chunks (no index)."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table

from archivist.cli.files import walk_files
from archivist.message import TextBlock
from archivist.rag import ApproxTokenChunker, default_registry


def add_chunk_command(commands: Any) -> None:
    """Register the `chunk` sub-command."""
    cmd = commands.add_parser("chunk", help="parse and chunk files, print the chunks")
    cmd.add_argument("paths", nargs="+", metavar="PATH")
    cmd.add_argument("--chunk-size", type=int, default=512)
    cmd.add_argument("--overlap", type=int, default=50)
    cmd.set_defaults(handler=run_chunk)


async def run_chunk(args: argparse.Namespace) -> int:
    """Print every chunk of every file; a file that fails is reported and skipped."""
    console = Console()
    registry = default_registry()
    chunker = ApproxTokenChunker(chunk_size=args.chunk_size, overlap=args.overlap)
    failed = 0
    for path in walk_files(args.paths):
        try:
            parser = registry.parser_for_path(path)
            chunks = await chunker.chunk(await parser.parse(str(path), path.name))
        except (ValueError, OSError) as exc:
            console.print(f"[red]failed[/red] {exc}")
            failed += 1
            continue
        table = Table(title=f"{path} — {len(chunks)} chunks", show_lines=True)
        table.add_column("#", justify="right")
        table.add_column("where")
        table.add_column("content")
        for chunk in chunks:
            where = ", ".join(f"{k}={v}" for k, v in chunk.metadata.items() if k != "media_type")
            if isinstance(chunk.content, TextBlock):
                body = chunk.content.text
            else:
                body = f"<{chunk.content.source.media_type} data>"
            table.add_row(str(chunk.chunk_index), where, body)
        console.print(table)
    return 1 if failed else 0
