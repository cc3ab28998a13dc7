"""`archivist index PATH...`: parse, chunk, embed and store files, incrementally."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from archivist.cli.files import walk_files
from archivist.cli.output import display_path, print_json, print_rows
from archivist.cli.session import (
    DEFAULT_EMBEDDING_TIMEOUT,
    add_chunking_arguments,
    add_common_arguments,
    add_json_argument,
    add_timeout_argument,
    open_session,
)
from archivist.embedding.registry import DEFAULT_EMBEDDING_MODEL, list_embedding_models

if TYPE_CHECKING:  # loaded when indexing runs, so registering the command costs nothing
    from archivist.rag.ingest import FileResult


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
    cmd.add_argument("--prune", action="store_true", help="drop documents whose files are gone")
    cmd.add_argument(
        "--keep-stale",
        action="store_true",
        help="keep the old version of a file that is now empty or fails to parse "
        "(default: remove it, so the index holds only what the files say now)",
    )
    add_timeout_argument(cmd, DEFAULT_EMBEDDING_TIMEOUT, "embedding provider")
    cmd.set_defaults(handler=run_index)


async def run_index(args: argparse.Namespace) -> int:
    """Index the files; print a summary; exit 1 if any file failed."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from archivist.rag import default_registry
    from archivist.rag.ingest import Outcome, ingest_files

    # Outcomes listed path by path (with the reason) in the summary and in --json.
    listed = {
        Outcome.SKIPPED: "skipped_files",
        Outcome.REMOVED: "removed_files",
        Outcome.PRUNED: "pruned_files",
    }
    console = Console(stderr=True)
    walk = walk_files(args.paths)
    args.embedding_timeout = args.timeout
    async with open_session(
        args,
        create=True,
        embedding=args.embedding,
        chunk_size=args.chunk_size,
        overlap=args.overlap,
        rebuild=args.rebuild,
    ) as session:
        record = session.record
        chunker = session.chunker
        with Progress(
            TextColumn("[bold]indexing"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[chunks]} chunks"),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=console,
            transient=True,
            disable=args.json,
        ) as progress:
            task = progress.add_task("", total=len(walk.files), chunks=0)
            total_chunks = 0

            def advance(result: FileResult) -> None:
                nonlocal total_chunks
                total_chunks += result.chunks
                if result.outcome not in (Outcome.PRUNED, Outcome.REMOVED):
                    progress.update(task, advance=1, chunks=total_chunks, description=result.path)

            def within(path: str, written: int, total: int) -> None:
                if total > 1:  # a large file moves the display chunk by chunk
                    description = f"{path} ({written}/{total} chunks)"
                    progress.update(task, chunks=total_chunks + written, description=description)

            report = await ingest_files(
                session.kb,
                walk.files,
                registry=default_registry(),
                chunker=chunker,
                prune_missing=args.prune,
                keep_stale=args.keep_stale,
                on_file=advance,
                on_chunks=within,
            )
        if report.count(Outcome.INDEXED) or report.count(Outcome.UPDATED):
            await session.store.optimize(session.kb.collection)
    code = 1 if report.failed else 0
    if args.json:
        summary: dict[str, Any] = {o.value: report.count(o) for o in Outcome}
        summary["failures"] = [{"path": r.path, "error": r.error} for r in report.failed]
        for outcome, key in listed.items():
            summary[key] = [
                {"path": r.path, "document_id": r.document_id, "reason": r.error}
                for r in report.results
                if r.outcome is outcome
            ]
        summary["skipped_paths"] = [{"path": s.path, "reason": s.reason} for s in walk.skipped]
        print_json(summary)
        return code
    for skipped in walk.skipped:
        console.print(
            f"[yellow]skipped[/yellow] {display_path(skipped.path)}: {skipped.reason}",
            highlight=False,
            soft_wrap=True,
        )
    for result in report.results:
        if result.outcome in (Outcome.FAILED, *listed):
            colour = "red" if result.outcome is Outcome.FAILED else "yellow"
            reason = f": {result.error}" if result.error else ""
            console.print(
                f"[{colour}]{result.outcome.value}[/{colour}] {display_path(result.path)}{reason}",
                highlight=False,
                soft_wrap=True,
            )
    print(
        f"knowledge base {args.kb!r} (chunk size {record.chunk_size}, overlap "
        f"{record.overlap}, {record.embedding_model})"
    )
    counts = {o.value: report.count(o) for o in Outcome}
    counts["skipped"] += len(walk.skipped)
    print_rows(list(counts), [[str(n) for n in counts.values()]])
    return code
