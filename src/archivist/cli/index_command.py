"""`archivist index PATH...`: parse, chunk, embed and store files, incrementally."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from archivist.cli.files import walk_files
from archivist.cli.output import display_path
from archivist.cli.session import add_common_arguments, open_session
from archivist.embedding.registry import DEFAULT_EMBEDDING_MODEL, list_embedding_models
from archivist.rag import ApproxTokenChunker, default_registry
from archivist.rag.ingest import FileResult, Outcome, ingest_files

LISTED = {
    Outcome.SKIPPED: "skipped_files",
    Outcome.REMOVED: "removed_files",
    Outcome.PRUNED: "pruned_files",
}
"""Outcomes listed path by path (with the reason) in the summary and in --json."""


def add_index_command(commands: Any) -> None:
    """Register the `index` sub-command."""
    cmd = commands.add_parser("index", help="index files and folders into a knowledge base")
    cmd.add_argument("paths", nargs="+", metavar="PATH")
    add_common_arguments(cmd)
    # 256 approximate tokens mostly fit the default model's 256-token input (on SciFact ~5%
    # of chunks still exceed it; the embedder truncates those and reports it).
    cmd.add_argument("--chunk-size", type=int, default=256)
    cmd.add_argument("--overlap", type=int, default=32)
    cmd.add_argument("--json", action="store_true", help="print the summary as JSON")
    cmd.add_argument(
        "--embedding",
        default=None,
        help=f"embedding model for a new KB: a local name (default {DEFAULT_EMBEDDING_MODEL}; "
        f"known: {', '.join(list_embedding_models())}), dashscope:MODEL[:DIMS] or "
        "openai:MODEL:DIMS",
    )
    cmd.add_argument("--prune", action="store_true", help="drop documents whose files are gone")
    cmd.add_argument(
        "--keep-stale",
        action="store_true",
        help="keep the old version of a file that is now empty or fails to parse "
        "(default: remove it, so the index holds only what the files say now)",
    )
    cmd.set_defaults(handler=run_index)


async def run_index(args: argparse.Namespace) -> int:
    """Index the files; print a summary; exit 1 if any file failed."""
    console = Console(stderr=True)
    chunker = ApproxTokenChunker(chunk_size=args.chunk_size, overlap=args.overlap)
    files = list(walk_files(args.paths))
    async with open_session(args, create=True, embedding=args.embedding) as session:
        with Progress(
            TextColumn("[bold]indexing"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[chunks]} chunks"),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=console,
            transient=True,
        ) as progress:
            task = progress.add_task("", total=len(files), chunks=0)
            total_chunks = 0

            def advance(result: FileResult) -> None:
                nonlocal total_chunks
                total_chunks += result.chunks
                if result.outcome not in (Outcome.PRUNED, Outcome.REMOVED):
                    progress.update(task, advance=1, chunks=total_chunks, description=result.path)

            report = await ingest_files(
                session.kb,
                files,
                registry=default_registry(),
                chunker=chunker,
                prune_missing=args.prune,
                keep_stale=args.keep_stale,
                on_file=advance,
            )
        if report.count(Outcome.INDEXED) or report.count(Outcome.UPDATED):
            await session.store.optimize(session.kb.collection)
    if args.json:
        summary: dict[str, Any] = {o.value: report.count(o) for o in Outcome}
        summary["failures"] = [{"path": r.path, "error": r.error} for r in report.failed]
        for outcome, key in LISTED.items():
            summary[key] = [
                {"path": r.path, "document_id": r.document_id, "reason": r.error}
                for r in report.results
                if r.outcome is outcome
            ]
        print(json.dumps(summary))
        return 1 if report.failed else 0
    for result in report.results:
        if result.outcome in (Outcome.FAILED, *LISTED):
            colour = "red" if result.outcome is Outcome.FAILED else "yellow"
            reason = f": {result.error}" if result.error else ""
            console.print(
                f"[{colour}]{result.outcome.value}[/{colour}] {display_path(result.path)}{reason}",
                highlight=False,
                soft_wrap=True,
            )
    table = Table(title=f"knowledge base {args.kb!r}")
    for outcome in Outcome:
        table.add_column(outcome.value, justify="right")
    table.add_row(*(str(report.count(o)) for o in Outcome))
    Console().print(table)
    return 1 if report.failed else 0
