"""`archivist search QUERY`: ranked passages with citations, as a table or JSON."""

from __future__ import annotations

import argparse
import shutil
from typing import TYPE_CHECKING, Any

from archivist.cli.output import display_path, print_json, text_lines
from archivist.cli.session import (
    CLIError,
    add_common_arguments,
    add_json_argument,
    non_empty,
    open_session,
    positive_int,
)

if TYPE_CHECKING:  # loaded when a search runs, so registering the command costs nothing
    from archivist.rag import VectorSearchResult


def add_search_command(commands: Any) -> None:
    """Register the `search` sub-command."""
    cmd = commands.add_parser(
        "search",
        help="search a knowledge base",
        description="search a knowledge base\n\n"
        "A query that starts with '-' (a flag, say) goes after -q/--query, or after `--`\n"
        "at the end of the command line:\n"
        "  archivist search -q --strip-components\n"
        "  archivist search -k 3 -- --strip-components",
    )
    cmd.add_argument("query", nargs="?", type=non_empty, help="what to search for")
    cmd.add_argument(
        "-q",
        "--query",
        dest="query_option",
        type=non_empty,
        metavar="TEXT",
        help="the query, also one that starts with '-'",
    )
    cmd.add_argument("-k", "--top-k", type=positive_int, default=5, help="hits to show")
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
        type=positive_int,
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
    add_json_argument(cmd)
    add_common_arguments(cmd)
    cmd.set_defaults(handler=run_search, dash_hint=DASH_HINT)


DASH_HINT = (
    "a query that starts with '-' goes after -q/--query or after `--`: "
    "archivist search -q --flag, or archivist search -- --flag"
)
"""Shown when `search` meets an option it does not know (usually a query starting with '-')."""


QUERY_OPTIONS = ("-q", "--query")


def attach_query_values(argv: list[str]) -> list[str]:
    """`argv` with `search -q VALUE` written `--query=VALUE`, so the word after -q/--query is
    the query even when it starts with '-' (argparse would take it for an option)."""
    start = next((i for i, a in enumerate(argv) if not a.startswith("-")), None)
    if start is None or argv[start] != "search":
        return argv
    out = argv[: start + 1]
    rest = iter(argv[start + 1 :])
    for arg in rest:
        if arg == "--":
            out += [arg, *rest]
            break
        if arg in QUERY_OPTIONS:
            value = next(rest, None)
            out.append(arg if value is None else f"--query={value}")
        else:
            out.append(arg)
    return out


def query_of(args: argparse.Namespace) -> str:
    """The query, given as the argument or with -q/--query (exactly one of them)."""
    if args.query is not None and args.query_option is not None:
        raise CLIError("give the query once: as an argument or with -q/--query, not both")
    query = args.query if args.query is not None else args.query_option
    if query is None:
        raise CLIError(f"search needs a query; {DASH_HINT}")
    return str(query)


def hit_json(rank: int, hit: VectorSearchResult) -> dict[str, Any]:
    """One hit as a JSON-ready dict."""
    from archivist.message import TextBlock

    meta = hit.chunk.metadata
    return {
        "rank": rank,
        "score": round(hit.score, 6),
        "document_id": hit.document_id,
        "source": hit.chunk.source,
        "path": meta.get("path"),
        "tenant": meta.get("tenant_id"),
        "page": meta.get("page"),
        "slide": meta.get("slide"),
        "sheet": meta.get("sheet"),
        "heading_path": meta.get("heading_path"),
        "chunk_index": hit.chunk.chunk_index,
        "text": hit.chunk.content.text if isinstance(hit.chunk.content, TextBlock) else None,
    }


async def run_search(args: argparse.Namespace) -> int:
    """Print the best hits; an empty knowledge base is reported, not a silent blank."""
    args.query = query_of(args)
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
        print_json([hit_json(i, h) for i, h in enumerate(hits, 1)])
        return 0
    width = max(40, shutil.get_terminal_size((100, 24)).columns)
    print(f"{len(hits)} hit(s) for {args.query!r}")
    for rank, hit in enumerate(hits, 1):
        print()
        print(hit_header(rank, hit))
        for line in passage_lines(hit, width):
            print(line)
    return 0


def hit_header(rank: int, hit: VectorSearchResult) -> str:
    """`[rank] score  path  page/slide/heading path  chunk N`: one line, the path never cut."""
    from archivist.rag.citation import location

    path = hit.chunk.metadata.get("path")
    where = display_path(path) if isinstance(path, str) else hit.chunk.source
    parts = [f"[{rank}]", f"{hit.score:.3f}", where, location(hit.chunk)]
    parts.append(f"chunk {hit.chunk.chunk_index}")
    return "  ".join(p for p in parts if p)


def passage_lines(hit: VectorSearchResult, width: int, indent: str = "    ") -> list[str]:
    """The hit's text as a block below its header, wrapped to `width`: paragraphs, table rows,
    list items and code lines kept."""
    from archivist.message import TextBlock

    content = hit.chunk.content
    if not isinstance(content, TextBlock):
        return [f"{indent}<{content.source.media_type}>"]
    return text_lines(content.text, width - 1, indent)
