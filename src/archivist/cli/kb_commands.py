"""`archivist kbs`, `verify` and `repair`: the knowledge bases of a store and their health."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from archivist.cli.arguments import DEFAULT_WAIT_SECONDS, add_common_arguments, add_json_argument
from archivist.cli.home import default_store_dir, load_kbs
from archivist.cli.output import count, print_json, print_rows
from archivist.cli.session import (
    check_kb_name,
    enter_kb_store,
    kb_store_dir,
    open_session,
    remove_kb,
    unknown_kb,
)


def add_kb_commands(commands: Any) -> None:
    """Register `kbs` (with `kbs rm`), `verify` and `repair`."""
    kbs = commands.add_parser(
        "kbs",
        help="list the knowledge bases: model, chunk settings, documents, chunks",
        usage="%(prog)s [-h] [--store STORE] [--json]\n"
        "       %(prog)s rm [-h] [-y] [--store STORE] [--wait SECONDS] [--json] NAME",
        description="list the knowledge bases: model, chunk settings, documents, chunks\n\n"
        "  archivist kbs            list them\n"
        "  archivist kbs rm NAME    delete one, with all its documents",
    )
    kbs.add_argument(
        "--store", type=Path, default=None, help="store directory (default: $ARCHIVIST_HOME/store)"
    )
    add_json_argument(kbs)
    kbs.set_defaults(handler=run_kbs)
    actions = kbs.add_subparsers(dest="kbs_action", metavar="{rm}", prog=kbs.prog)
    rm = actions.add_parser(
        "rm",
        help="delete a knowledge base: its settings and the documents of every tenant",
        description="Delete knowledge base NAME: its settings and the documents of every\n"
        "tenant, vectors and all. Only indexing the files again brings them back, so\n"
        "it asks first on a terminal; elsewhere (a script, CI) it needs --yes.\n"
        "One document is removed with `archivist rm DOC_ID|PATH --kb NAME`.",
    )
    rm.add_argument("name", metavar="NAME", help="the knowledge base (see: archivist kbs)")
    rm.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="delete without asking (needed when there is no terminal to ask on)",
    )
    # SUPPRESS: a value given before `rm` (`kbs --store S rm NAME`) is not reset to a default
    rm.add_argument(
        "--store",
        type=Path,
        default=argparse.SUPPRESS,
        help="store directory (default: $ARCHIVIST_HOME/store)",
    )
    rm.add_argument(
        "--wait",
        type=float,
        default=DEFAULT_WAIT_SECONDS,
        metavar="SECONDS",
        help="how long to wait while another archivist process has the knowledge base open",
    )
    rm.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print JSON for scripts"
    )
    rm.set_defaults(handler=run_kbs_rm)
    verify = commands.add_parser(
        "verify", help="check that every document is whole (after a crash or a kill)"
    )
    add_common_arguments(verify)
    add_json_argument(verify)
    verify.set_defaults(handler=run_verify)
    repair = commands.add_parser(
        "repair", help="remove the leftovers of interrupted writes that verify reports"
    )
    add_common_arguments(repair)
    add_json_argument(repair)
    repair.set_defaults(handler=run_repair)


async def _counts(store_dir: Path, name: str) -> tuple[int | None, int | None]:
    """(documents, chunks) of KB `name` over every tenant; (None, None) while it is in use."""
    from archivist.errors import StoreLockedError

    try:
        store = await enter_kb_store(kb_store_dir(store_dir, name), name, wait=0.0)
    except StoreLockedError:
        return None, None
    try:
        documents = await store.list_documents(name)
    finally:
        await store.__aexit__(None, None, None)
    return len(documents), sum(d.chunk_count for d in documents)


async def run_kbs(args: argparse.Namespace) -> int:
    """One line per knowledge base of the store."""
    store_dir: Path = args.store or default_store_dir()
    rows: list[dict[str, Any]] = []
    for name, record in sorted(load_kbs(store_dir).items()):
        documents, chunks = await _counts(store_dir, name)
        rows.append(
            {
                "name": name,
                "embedding_model": record.embedding_model,
                "dimensions": record.dimensions,
                "chunk_size": record.chunk_size,
                "overlap": record.overlap,
                "documents": documents,
                "chunks": chunks,
                "description": record.description,
            }
        )
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(f"no knowledge bases in {store_dir} yet; create one with: archivist index PATH")
        return 0
    print_rows(
        ["name", "documents", "chunks", "chunk size/overlap", "embedding model"],
        [
            [
                row["name"],
                "in use" if row["documents"] is None else str(row["documents"]),
                "in use" if row["chunks"] is None else str(row["chunks"]),
                f"{_or_unknown(row['chunk_size'])}/{_or_unknown(row['overlap'])}",
                row["embedding_model"],
            ]
            for row in rows
        ],
    )
    return 0


async def run_kbs_rm(args: argparse.Namespace) -> int:
    """Delete knowledge base `args.name` once confirmed: its stored collection, then its
    record (see `remove_kb`)."""
    from archivist.cli.confirm import confirm

    name: str = args.name
    check_kb_name(name)
    store_dir: Path = args.store or default_store_dir()
    if name not in load_kbs(store_dir):
        raise unknown_kb(name, store_dir, "nothing was deleted")
    documents, chunks = await _counts(store_dir, name)
    holds = ""
    if documents is not None and chunks is not None:
        holds = f" ({count(documents, 'document')}, {count(chunks, 'chunk')})"
    confirm(
        f"this deletes knowledge base {name!r}{holds}, the documents of every tenant; "
        "only indexing the files again brings them back",
        args.yes,
    )
    store = await enter_kb_store(kb_store_dir(store_dir, name), name, args.wait)
    try:
        await remove_kb(store, store_dir, name)
    finally:
        await store.__aexit__(None, None, None)
    if args.json:
        print_json({"removed": {"name": name, "documents": documents, "chunks": chunks}})
    else:
        print(f"deleted knowledge base {name!r}{holds}")
    return 0


async def run_verify(args: argparse.Namespace) -> int:
    """Report incomplete documents in scope; exit 1 when there are any."""
    async with open_session(args, create=False) as session:
        report = await session.kb.verify()
    if args.json:
        print_json(report.model_dump(mode="json"))
    else:
        print(f"{report.documents_checked} document(s) checked in {args.kb!r}")
        for document in report.incomplete:
            print(f"incomplete {document.document_id}: {document.problem}")
        if report.incomplete:
            print(f"run: archivist repair --kb {args.kb}" + _tenant_flag(args))
        else:
            print("every document is whole")
    return 1 if report.incomplete else 0


async def run_repair(args: argparse.Namespace) -> int:
    """Remove the leftovers verify reports; exit 1 if anything is still incomplete."""
    async with open_session(args, create=False) as session:
        report = await session.kb.repair()
    if args.json:
        print_json(report.model_dump(mode="json"))
    else:
        print(f"removed {len(report.removed)} interrupted write(s)")
        for document_id in report.documents_removed:
            print(f"removed {document_id}: it had no complete version; index its file again")
        left = report.remaining.incomplete
        print("every document is whole" if not left else f"{len(left)} still incomplete")
    return 1 if report.remaining.incomplete else 0


def _or_unknown(value: object) -> str:
    return "?" if value is None else str(value)


def _tenant_flag(args: argparse.Namespace) -> str:
    return f" --tenant {args.tenant}" if args.tenant else ""
