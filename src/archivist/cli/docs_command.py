"""`archivist ls` and `archivist rm`: the documents of a knowledge base."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from archivist.cli.session import CLIError, add_common_arguments, open_session
from archivist.rag.ingest import INDEXED_AT_KEY, PATH_KEY, document_id_for


def add_docs_commands(commands: Any) -> None:
    """Register `ls` and `rm`."""
    ls = commands.add_parser("ls", help="list the documents of a knowledge base")
    add_common_arguments(ls)
    ls.set_defaults(handler=run_ls)
    rm = commands.add_parser("rm", help="remove a document by id or by its file's path")
    rm.add_argument("target", metavar="DOC_ID|PATH")
    add_common_arguments(rm)
    rm.set_defaults(handler=run_rm)


async def run_ls(args: argparse.Namespace) -> int:
    """A table of documents: id, source, chunk count, when indexed."""
    async with open_session(args, create=False) as session:
        documents = await session.kb.list_documents()
    table = Table(title=f"{len(documents)} document(s) in {args.kb!r}")
    for column in ("id", "source", "chunks", "indexed at"):
        table.add_column(column, overflow="fold")
    for doc in sorted(documents, key=lambda d: str(d.metadata.get(PATH_KEY, d.source))):
        table.add_row(
            doc.document_id,
            str(doc.metadata.get(PATH_KEY, doc.source)),
            str(doc.chunk_count),
            str(doc.metadata.get(INDEXED_AT_KEY, "")),
        )
    Console().print(table)
    return 0


async def run_rm(args: argparse.Namespace) -> int:
    """Delete one document, named by id or by the path it was indexed from."""
    async with open_session(args, create=False) as session:
        documents = {d.document_id: d for d in await session.kb.list_documents()}
        target = args.target
        if target not in documents:
            by_path = document_id_for(Path(target))
            if by_path not in documents:
                raise CLIError(f"no document {target!r} in knowledge base {args.kb!r}")
            target = by_path
        await session.kb.delete_document(target)
    Console().print(f"removed {target} ({documents[target].source})")
    return 0
