"""`archivist chunk PATH...`: parse and chunk files and print the chunks (no index), with the
settings `index` would use, so the preview shows the chunks `index` cuts (a text-only model
then leaves the pictures out)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archivist.cli.arguments import add_chunking_arguments, add_json_argument
from archivist.cli.files import walk_files
from archivist.cli.home import default_store_dir, load_kbs
from archivist.cli.ocr_options import add_ocr_arguments, ocr_from_args
from archivist.cli.output import display_path, print_json
from archivist.cli.session import check_kb_name, embedding_model, make_chunker, settled_record

if TYPE_CHECKING:  # loaded when the command runs, so registering it costs nothing
    from archivist.rag.document import Chunk


def add_chunk_command(commands: Any) -> None:
    """Register the `chunk` sub-command."""
    cmd = commands.add_parser(
        "chunk", help="parse and chunk files, print the chunks as `index` would cut them"
    )
    cmd.add_argument("paths", nargs="+", metavar="PATH")
    cmd.add_argument("--kb", default="default", help="use this knowledge base's chunk settings")
    cmd.add_argument("--store", default=None, help="store directory")
    add_chunking_arguments(cmd, from_kb=True)
    add_ocr_arguments(cmd)
    add_json_argument(cmd)
    cmd.set_defaults(handler=run_chunk)


def _chunk_json(path: str, chunk: Chunk) -> dict[str, Any]:
    from archivist.message import TextBlock

    content = chunk.content
    return {
        "path": path,
        "chunk_index": chunk.chunk_index,
        "total_chunks": chunk.total_chunks,
        "metadata": chunk.metadata,
        "text": content.text if isinstance(content, TextBlock) else None,
        "media_type": None if isinstance(content, TextBlock) else content.source.media_type,
    }


async def run_chunk(args: argparse.Namespace) -> int:
    """Print every chunk of every file; a file that fails is reported and skipped."""
    from archivist.message import TextBlock
    from archivist.rag import default_registry

    check_kb_name(args.kb)
    store_dir = Path(args.store) if args.store else default_store_dir()
    record = settled_record(
        load_kbs(store_dir).get(args.kb),
        args.kb,
        embedding=None,
        chunk_size=args.chunk_size,
        overlap=args.overlap,
        rebuild=True,  # a preview may try other settings
    )
    chunker = make_chunker(embedding_model(record.embedding_model), record)
    registry = default_registry(ocr_from_args(args))
    failed = 0
    rows: list[dict[str, Any]] = []
    walk = walk_files(args.paths)
    for path in walk.files:
        try:
            parser = registry.parser_for_path(path)
            chunks = await chunker.chunk(await parser.parse(str(path.resolve()), path.name))
        except (ValueError, OSError) as exc:
            print(f"failed {display_path(path)}: {exc}")
            failed += 1
            continue
        if args.json:
            rows.extend(_chunk_json(str(path), chunk) for chunk in chunks)
            continue
        print(
            f"== {display_path(path)}: {len(chunks)} chunk(s), chunk size "
            f"{chunker.chunk_size}, overlap {chunker.overlap}"
        )
        for chunk in chunks:
            where = ", ".join(f"{k}={v}" for k, v in chunk.metadata.items() if k != "media_type")
            print(f"-- chunk {chunk.chunk_index}" + (f" ({where})" if where else ""))
            content = chunk.content
            if isinstance(content, TextBlock):
                print(content.text)
            else:
                print(f"<{content.source.media_type} data>")
    for skipped in walk.skipped:
        print(f"skipped {display_path(skipped.path)}: {skipped.reason}")
    if args.json:
        print_json(rows)
    return 1 if failed else 0
