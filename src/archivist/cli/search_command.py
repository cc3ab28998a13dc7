"""`archivist search QUERY`: ranked passages with citations, as a table or JSON."""

from __future__ import annotations

import argparse
import shutil
from typing import TYPE_CHECKING, Any

from archivist.cli.arguments import (
    CLIError,
    add_common_arguments,
    add_json_argument,
    add_option,
    non_empty,
)
from archivist.cli.output import display_path, print_json, text_lines
from archivist.cli.session import empty_kb, open_session
from archivist.options import MAX_PER_DOCUMENT, MIN_RELEVANCE, TOP_K

if TYPE_CHECKING:  # loaded when a search runs, so registering the command costs nothing
    from datetime import datetime

    from archivist.rag import VectorSearchResult
    from archivist.rag.store.search_filter import SearchFilter


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
    cmd.add_argument("query", nargs="?", type=non_empty, metavar="QUERY", help="what to search for")
    cmd.add_argument(
        "-q",
        "--query",
        dest="query_option",
        type=non_empty,
        metavar="TEXT",
        help="the query, also one that starts with '-'",
    )
    add_option(cmd, TOP_K, short="-k")
    cmd.add_argument(
        "--threshold", type=float, default=None, help="minimum similarity (searches dense)"
    )
    cmd.add_argument(
        "--mode",
        choices=["hybrid", "dense", "sparse"],
        default=None,
        help="dense vectors + BM25 ranked together, dense only, or BM25 only "
        "(default: hybrid where the knowledge base has BM25 vectors)",
    )
    add_option(cmd, MAX_PER_DOCUMENT, help="at most N passages from one document")
    cmd.add_argument(
        "--diversity",
        type=float,
        default=None,
        metavar="D",
        help="0..1: pick passages by maximal marginal relevance (0 = most relevant only)",
    )
    add_option(cmd, MIN_RELEVANCE)
    cmd.add_argument(
        "--context",
        type=context_count,
        default=0,
        metavar="N",
        help="show each passage with N chunks before and after it (overlapping ones merged)",
    )
    cmd.add_argument(
        "--all-copies",
        action="store_true",
        help="show each copy of a passage found in several files as its own hit "
        "(default: one hit that lists the other files)",
    )
    narrow = cmd.add_argument_group("filters (applied before ranking; repeat an option for any of)")
    narrow.add_argument(
        "--path",
        action="append",
        default=[],
        metavar="GLOB",
        help="file name ('*.md') or path ('/usr/share/doc/*') glob",
    )
    narrow.add_argument(
        "--type", action="append", default=[], metavar="EXT", help="file extension (md, pdf)"
    )
    narrow.add_argument(
        "--since",
        type=since_date,
        default=None,
        metavar="DATE",
        help="files modified on or after DATE (2024-05-01 or an ISO 8601 time)",
    )
    narrow.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="metadata equality, or KEY>=V / KEY<V ... on numbers and dates",
    )
    add_json_argument(cmd)
    add_common_arguments(cmd)
    cmd.set_defaults(handler=run_search, dash_hint=DASH_HINT, words_hint=WORDS_HINT)


DASH_HINT = (
    "a query that starts with '-' goes after -q/--query or after `--`: "
    "archivist search -q --flag, or archivist search -- --flag"
)
"""Shown when `search` meets an option it does not know (usually a query starting with '-')."""


WORDS_HINT = 'a query of several words goes in quotes: archivist search "how tenants work"'
"""Shown when `search` meets words too many (a query of several words not quoted)."""


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
        raise CLIError(
            f'search needs a query, e.g. archivist search "how tenants work"; {DASH_HINT}'
        )
    return str(query)


def context_count(text: str) -> int:
    """argparse type: a whole number of chunks from 0 to MAX_CONTEXT."""
    from archivist.rag.knowledge.context import MAX_CONTEXT

    if not text.strip().isdigit() or int(text) > MAX_CONTEXT:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from 0 to {MAX_CONTEXT}, got {text!r}"
        )
    return int(text)


def since_date(text: str) -> datetime:
    """argparse type: an ISO 8601 date or date-time (UTC unless it says otherwise)."""
    from datetime import datetime

    from archivist.rag.store.search_filter import parse_bound

    try:
        bound = parse_bound(text)
    except ValueError:
        bound = 0.0
    if not isinstance(bound, datetime):
        raise argparse.ArgumentTypeError(f"must be a date like 2024-05-01, got {text!r}")
    return bound


def search_filter_of(args: argparse.Namespace) -> SearchFilter | None:
    """The filters given on the command line, or None; CLIError naming the option if bad."""
    from pydantic import ValidationError

    from archivist.rag.store.search_filter import SearchFilter, parse_where

    try:
        where = parse_where(args.where)
    except ValueError as error:
        raise CLIError(str(error)) from None
    for option, values in (("--path", args.path), ("--type", args.type)):
        try:
            SearchFilter.model_validate({option.removeprefix("--") + "s": values})
        except ValidationError as error:
            message = str(error.errors()[0]["msg"]).removeprefix("Value error, ")
            raise CLIError(f"{option}: {message}") from None
    try:
        found = SearchFilter(paths=args.path, types=args.type, since=args.since, where=where)
    except ValidationError as error:
        message = str(error.errors()[0]["msg"]).removeprefix("Value error, ")
        raise CLIError(f"--where: {message}") from None
    return None if found.is_empty else found


def hit_json(rank: int, hit: VectorSearchResult) -> dict[str, Any]:
    """One hit as a JSON-ready dict."""
    from archivist.message import TextBlock
    from archivist.rag.knowledge.context import context_text

    meta = hit.chunk.metadata
    return {
        "rank": rank,
        "score": round(hit.score, 6),
        "relevance": None if hit.relevance is None else round(hit.relevance, 4),
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
        "context": None
        if hit.context is None
        else {
            "first_chunk": hit.context[0].chunk_index,
            "last_chunk": hit.context[-1].chunk_index,
            "text": context_text(hit),
        },
        "also_in": [
            {
                "document_id": copy.document_id,
                "source": copy.source,
                "path": copy.metadata.get("path"),
                "chunk_index": copy.chunk_index,
                "score": round(copy.score, 6),
            }
            for copy in hit.also_in
        ],
    }


async def run_search(args: argparse.Namespace) -> int:
    """Print the best hits; an empty knowledge base is reported, not a silent blank."""
    args.query = query_of(args)
    search_filter = search_filter_of(args)
    async with open_session(args, create=False) as session:
        hits = await session.kb.search(
            args.query,
            top_k=args.top_k,
            score_threshold=args.threshold,
            mode=args.mode,
            max_per_document=args.max_per_document,
            diversity=args.diversity,
            search_filter=search_filter,
            context=args.context,
            min_relevance=args.min_relevance,
            collapse_duplicates=not args.all_copies,
        )
        if not hits and not await session.kb.list_documents():
            raise empty_kb(args.kb)
    if args.json:
        print_json([hit_json(i, h) for i, h in enumerate(hits, 1)])
        return 0
    width = max(40, shutil.get_terminal_size((100, 24)).columns)
    print(f"{len(hits)} hit(s) for {args.query!r}")
    for rank, hit in enumerate(hits, 1):
        print()
        print(hit_header(rank, hit, width))
        for line in copy_lines(hit):
            print(line)
        for line in passage_lines(hit, width):
            print(line)
    return 0


def hit_header(rank: int, hit: VectorSearchResult, width: int | None = None) -> str:
    """`[rank] relevance  path  page/slide/heading path  chunk N`: one line, the path never
    cut. Within `width` columns where it can be: a long heading path keeps its last
    headings ("… > Parent > Heading"), and goes last if the path alone is that long."""
    from archivist.rag.knowledge.citation import location

    path = hit.chunk.metadata.get("path")
    where = display_path(path) if isinstance(path, str) else hit.chunk.source
    measure = f"{hit.score:.3f}" if hit.relevance is None else f"relevance {hit.relevance:.2f}"
    chunk = f"chunk {hit.chunk.chunk_index}"
    if hit.context and len(hit.context) > 1:
        chunk += f"  (with {hit.context[0].chunk_index}-{hit.context[-1].chunk_index})"
    place = location(hit.chunk)
    if width is not None and place:
        room = width - len("  ".join([f"[{rank}]", measure, where, chunk])) - 2
        place = _fitted(place, room)
    return "  ".join(p for p in (f"[{rank}]", measure, where, place, chunk) if p)


def _fitted(place: str, room: int) -> str:
    """`place` (headings joined by " > ") in `room` columns: its last headings after "… > ",
    or at least the last heading, cut with "…"; nothing if there is no room at all."""
    if len(place) <= room:
        return place
    headings = place.split(" > ")
    for first in range(1, len(headings)):
        kept = "… > " + " > ".join(headings[first:])
        if len(kept) <= room:
            return kept
    if room < 8:
        return ""
    return headings[-1][: room - 1] + "…"


def copy_lines(hit: VectorSearchResult, indent: str = "    ") -> list[str]:
    """`also in PATH  chunk N`, one line per other place holding the hit's text (paths whole)."""
    lines = []
    for copy in hit.also_in:
        path = copy.metadata.get("path")
        where = display_path(path) if isinstance(path, str) else copy.source
        lines.append(f"{indent}also in {where}  chunk {copy.chunk_index}")
    return lines


def passage_lines(hit: VectorSearchResult, width: int, indent: str = "    ") -> list[str]:
    """The hit's text as a block below its header, wrapped to `width`: paragraphs, table rows,
    list items and code lines kept."""
    from archivist.message import TextBlock

    content = hit.chunk.content
    if not isinstance(content, TextBlock):
        return [f"{indent}<{content.source.media_type}>"]
    from archivist.rag.knowledge.context import context_text

    text = context_text(hit) or content.text
    return text_lines(text, width - 1, indent)
