"""`archivist search QUERY`: ranked passages with citations, as a table or JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from archivist.cli.session import CLIError, add_common_arguments, open_session
from archivist.message import TextBlock
from archivist.rag import VectorSearchResult


def add_search_command(commands: Any) -> None:
    """Register the `search` sub-command."""
    cmd = commands.add_parser("search", help="search a knowledge base")
    cmd.add_argument("query")
    cmd.add_argument("-k", "--top-k", type=int, default=5)
    cmd.add_argument(
        "--threshold", type=float, default=None, help="minimum similarity (searches dense)"
    )
    cmd.add_argument(
        "--mode",
        choices=["hybrid", "dense", "sparse"],
        default=None,
        help="dense vectors + BM25 fused, dense only, or BM25 only "
        "(default: hybrid where the knowledge base has BM25 vectors)",
    )
    cmd.add_argument(
        "--max-per-document",
        type=int,
        default=None,
        metavar="N",
        help="at most N passages from one document",
    )
    cmd.add_argument(
        "--diversity",
        type=float,
        default=None,
        metavar="D",
        help="0..1: pick passages by maximal marginal relevance (0 = most relevant only)",
    )
    cmd.add_argument("--json", action="store_true", help="print JSON for scripts")
    add_common_arguments(cmd)
    cmd.set_defaults(handler=run_search)


def hit_location(hit: VectorSearchResult) -> str:
    """`page N` / `slide N` when the chunk knows it, else empty."""
    meta = hit.chunk.metadata
    return ", ".join(f"{k} {meta[k]}" for k in ("page", "slide") if k in meta)


def snippet(hit: VectorSearchResult, width: int = 240) -> str:
    """The start of a hit's text on one line, or a note for binary content."""
    content = hit.chunk.content
    if not isinstance(content, TextBlock):
        return f"<{content.source.media_type}>"
    text = " ".join(content.text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def hit_json(rank: int, hit: VectorSearchResult) -> dict[str, Any]:
    """One hit as a JSON-ready dict."""
    meta = hit.chunk.metadata
    return {
        "rank": rank,
        "score": round(hit.score, 6),
        "document_id": hit.document_id,
        "source": hit.chunk.source,
        "path": meta.get("path"),
        "page": meta.get("page"),
        "slide": meta.get("slide"),
        "chunk_index": hit.chunk.chunk_index,
        "text": hit.chunk.content.text if isinstance(hit.chunk.content, TextBlock) else None,
    }


async def run_search(args: argparse.Namespace) -> int:
    """Print the best hits; an empty knowledge base is reported, not a silent blank."""
    async with open_session(args, create=False) as session:
        hits = await session.kb.search(
            args.query,
            top_k=args.top_k,
            score_threshold=args.threshold,
            mode=args.mode,
            max_per_document=args.max_per_document,
            diversity=args.diversity,
        )
        if not hits and not await session.kb.list_documents():
            raise CLIError(
                f"knowledge base {args.kb!r} is empty; add files with: "
                f"archivist index PATH --kb {args.kb}"
            )
    if args.json:
        print(json.dumps([hit_json(i, h) for i, h in enumerate(hits, 1)], ensure_ascii=False))
        return 0
    table = Table(title=f"{len(hits)} hit(s) for {args.query!r}", show_lines=True)
    for column in ("#", "score", "source", "where", "chunk", "snippet"):
        table.add_column(column, overflow="fold")
    for rank, hit in enumerate(hits, 1):
        table.add_row(
            str(rank),
            f"{hit.score:.3f}",
            hit.chunk.source,
            hit_location(hit),
            str(hit.chunk.chunk_index),
            snippet(hit),
        )
    Console().print(table)
    return 0
