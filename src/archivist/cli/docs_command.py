"""`archivist ls` and `archivist rm`: the documents of a knowledge base."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archivist.cli.arguments import add_common_arguments, add_json_argument
from archivist.cli.output import display_path, print_json, print_rows
from archivist.cli.session import open_session
from archivist.errors import DocumentNotFoundError

if TYPE_CHECKING:  # loaded when the command runs, so registering it costs nothing
    from archivist.rag.record import DocumentSummary


def add_docs_commands(commands: Any) -> None:
    """Register `ls` and `rm`."""
    ls = commands.add_parser("ls", help="list the documents of a knowledge base")
    add_common_arguments(ls)
    add_json_argument(ls)
    ls.set_defaults(handler=run_ls)
    rm = commands.add_parser("rm", help="remove a document by id or by its file's path")
    rm.add_argument("target", metavar="DOC_ID|PATH")
    add_common_arguments(rm)
    add_json_argument(rm)
    rm.set_defaults(handler=run_rm)


def document_json(doc: DocumentSummary) -> dict[str, Any]:
    """One document as a JSON-ready dict, with its full id and path."""
    from archivist.rag.knowledge.ingest import INDEXED_AT_KEY, PATH_KEY
    from archivist.rag.store.tenant import TENANT_KEY

    return {
        "id": doc.document_id,
        "path": doc.metadata.get(PATH_KEY),
        "source": doc.source,
        "chunks": doc.chunk_count,
        "indexed_at": doc.metadata.get(INDEXED_AT_KEY),
        "tenant": doc.metadata.get(TENANT_KEY),
    }


async def run_ls(args: argparse.Namespace) -> int:
    """One line per document: id, chunk count, when indexed, path (never wrapped)."""
    from archivist.rag.knowledge.ingest import INDEXED_AT_KEY, PATH_KEY

    async with open_session(args, create=False) as session:
        documents = await session.kb.list_documents()
    documents.sort(key=lambda d: str(d.metadata.get(PATH_KEY, d.source)))
    if args.json:
        print_json([document_json(doc) for doc in documents])
        return 0
    rows = [
        [
            doc.document_id,
            str(doc.chunk_count),
            str(doc.metadata.get(INDEXED_AT_KEY, "")),
            display_path(str(doc.metadata.get(PATH_KEY, doc.source))),
        ]
        for doc in documents
    ]
    scope = f"tenant {args.tenant!r}" if args.tenant else "no tenant"
    print(f"{len(documents)} document(s) in {args.kb!r} ({scope})")
    if rows:
        print_rows(["id", "chunks", "indexed at", "path"], rows)
    return 0


async def run_rm(args: argparse.Namespace) -> int:
    """Delete one document, named by id or by the path it was indexed from."""
    from archivist.rag.knowledge.ingest import PATH_KEY, document_id_for

    async with open_session(args, create=False) as session:
        documents = {d.document_id: d for d in await session.kb.list_documents()}
        target = args.target
        if target not in documents:
            by_path = document_id_for(Path(target), session.kb.metadata_filter)
            if by_path not in documents:
                raise DocumentNotFoundError(
                    f"no document {target!r} in knowledge base {args.kb!r}",
                    document_id=target,
                    knowledge_base=args.kb,
                )
            target = by_path
        await session.kb.delete_document(target)
    removed = documents[target]
    if args.json:
        print_json({"removed": document_json(removed)})
    else:
        path = display_path(str(removed.metadata.get(PATH_KEY, removed.source)))
        print(f"removed {target} ({path})")
    return 0
