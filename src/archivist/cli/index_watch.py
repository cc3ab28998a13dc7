"""What `archivist index PATH --watch` runs: index the folders once as `archivist index`
does, then index what changes in them, one pass per burst of changes, until Ctrl-C.

Each pass enters the knowledge base's store, runs `ingest_files` on the files added or
changed (with the pruning of `--prune` limited to the paths deleted or renamed away) and
closes the store, so other commands (a search) can open the knowledge base between passes;
a pass that finds it held past `--wait` keeps its changes for the next try. The model is
loaded once for the whole watch."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from watchfiles import Change, awatch
from watchfiles.main import FileChange

from archivist.cli.arguments import CLIError
from archivist.cli.files import SkippedPath, walk_files
from archivist.cli.home import archivist_home, default_store_dir, load_kbs
from archivist.cli.index_run import RunSummary, note, run_index
from archivist.cli.notices import DocumentNotices
from archivist.cli.ocr_options import ocr_from_args
from archivist.cli.output import print_json
from archivist.cli.progress import duration
from archivist.cli.session import SessionPlan, enter_session, plan_session
from archivist.errors import FileError, StoreLockedError
from archivist.rag import default_registry
from archivist.rag.knowledge.ingest import IngestReport, Outcome, ingest_files
from archivist.rag.parser.registry import ParserRegistry

QUIET_MS = 300
"""A pass starts once the folders have been quiet this long (watchfiles' `step`)..."""

LONGEST_MS = 10_000
"""...or this long after the first change of a burst that goes on (its `debounce`)."""

BUSY_RETRY_SECONDS = 2.0
"""How long a pass that found the knowledge base held past `--wait` pauses before it tries
again (with the changes made meanwhile)."""

POLL_MS = 500
"""How often the watching thread looks up from the file system, so Ctrl-C ends it soon."""


def watched_folders(paths: list[str]) -> list[Path]:
    """The resolved folders to watch; a file, a missing path or anything else is a CLIError."""
    folders = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            raise CLIError(
                f"{raw}: --watch watches folders; this is a file (index it without --watch)"
            )
        if not path.is_dir():
            raise CLIError(f"{raw}: no such folder to watch")
        folders.append(path.resolve())
    return folders


class Visible:
    """The watch filter: paths the walk would enter (no name starting with '.' below a
    watched folder), outside archivist's own home and store, which each pass writes to."""

    def __init__(self, folders: list[Path], own: Iterable[Path]) -> None:
        self.folders = folders
        self.own = [path.resolve() for path in own]

    def __call__(self, change: Change, raw: str) -> bool:
        path = Path(raw)
        if any(path == own or path.is_relative_to(own) for own in self.own):
            return False
        for folder in self.folders:
            if path.is_relative_to(folder):
                return not any(part.startswith(".") for part in path.relative_to(folder).parts)
        return False


def sort_changes(
    changes: Iterable[tuple[Change, str]],
) -> tuple[list[Path], list[Path], list[SkippedPath]]:
    """(files to index, paths gone, paths the walk skipped) for a burst of changes, as the
    file system is now: a path's last state counts, whatever events it had on the way. A
    folder that appeared is walked (its files came with it, without events of their own)."""
    files: dict[Path, None] = {}
    gone: list[Path] = []
    skipped: list[SkippedPath] = []
    for change, raw in sorted(changes, key=lambda item: item[1]):
        path = Path(raw)
        if path.is_dir():
            if change is Change.added:
                walk = walk_files([raw])
                files.update(dict.fromkeys(walk.files))
                skipped += walk.skipped
        elif path.is_file():
            files[path] = None
        elif not path.exists() and not path.is_symlink():
            gone.append(path)
    return list(files), gone, skipped


class ChangeFeed:
    """The folders' changes, watched in the background from the moment it is entered, so
    what changes while the first index or a pass runs waits, merged, for the next pass."""

    def __init__(self, folders: list[Path], watch_filter: Visible) -> None:
        self.folders = folders
        self.watch_filter = watch_filter
        self._queue: asyncio.Queue[set[FileChange] | Exception] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ChangeFeed:
        self._task = asyncio.create_task(self._pump())
        await asyncio.sleep(0)  # the task runs until it waits for changes: the watch is set
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)  # within POLL_MS

    async def _pump(self) -> None:
        try:
            async for changes in awatch(
                *self.folders,
                watch_filter=self.watch_filter,
                debounce=LONGEST_MS,
                step=QUIET_MS,
                rust_timeout=POLL_MS,
            ):
                self._queue.put_nowait(changes)
        except Exception as exc:  # the watch failed (e.g. a folder became unreadable)
            self._queue.put_nowait(exc)

    def put_back(self, changes: set[FileChange]) -> None:
        """Changes a pass could not take, for the next call of `next` (at once)."""
        self._queue.put_nowait(changes)

    async def next(self) -> set[FileChange]:
        """Every change since the last call, waiting for the next burst if there is none."""
        item = await self._queue.get()
        changes: set[FileChange] = set()
        while True:
            if isinstance(item, Exception):
                raise item
            changes |= item
            if self._queue.empty():
                return changes
            item = self._queue.get_nowait()


async def run_watch(args: argparse.Namespace) -> int:
    """Index the folders as `archivist index` does, then each burst of changes in them, until
    interrupted (Ctrl-C ends it with the interrupt's exit code, the store closed)."""
    folders = watched_folders(args.paths)
    store_dir = args.store or default_store_dir()
    console = Console(stderr=True)
    watch_filter = Visible(folders, (archivist_home(), store_dir))
    async with ChangeFeed(folders, watch_filter) as feed:
        if walk_files(args.paths).files or (args.prune and args.kb in load_kbs(store_dir)):
            try:
                await run_index(args)  # a file that failed is reported there; the watch goes on
            except FileError as exc:  # nothing indexed yet: the changes to come may be
                note(console, "yellow", "note", str(exc))
        plan = plan_session(
            args,
            create=True,
            embedding=args.embedding,
            chunk_size=args.chunk_size,
            overlap=args.overlap,
        )
        registry = default_registry(ocr_from_args(args))
        console.print(
            escape(f"watching {', '.join(args.paths)} for changes (Ctrl-C to stop)"),
            highlight=False,
            soft_wrap=True,
        )
        try:
            passes = 0
            while True:
                changes = await feed.next()
                files, gone, skipped = sort_changes(changes)
                if not files and args.kb not in load_kbs(store_dir):
                    continue  # nothing to add, nothing indexed yet to remove
                if not files and not gone:
                    continue
                started = time.monotonic()
                notices = DocumentNotices()
                try:
                    with notices.collecting():
                        report, plan = await index_pass(
                            plan, files, gone, registry, args.keep_stale
                        )
                except StoreLockedError as exc:  # another process kept it past --wait
                    note(
                        console,
                        "yellow",
                        "busy",
                        f"{exc.holder} holds knowledge base "
                        f"{args.kb!r}; its changes wait for the next try",
                    )
                    feed.put_back(changes)
                    await asyncio.sleep(BUSY_RETRY_SECONDS)
                    continue
                if not report.results and not skipped:
                    continue  # e.g. a file never indexed was deleted
                passes += 1
                summary = RunSummary(report, skipped, notices, time.monotonic() - started, {})
                report_pass(console, args.json, passes, summary, plan)
        finally:
            await plan.model.aclose()


async def index_pass(
    plan: SessionPlan,
    files: list[Path],
    gone: list[Path],
    registry: ParserRegistry,
    keep_stale: bool,
) -> tuple[IngestReport, SessionPlan]:
    """Index `files` and remove the documents of the files at or under `gone` in one entry
    of the store, as `archivist index` writes; the plan for the next pass."""
    async with enter_session(plan) as session:
        report = await ingest_files(
            session.kb,
            files,
            registry=registry,
            chunker=session.chunker,
            prune_missing=bool(gone),
            prune_within=gone,
            keep_stale=keep_stale,
        )
        if report.count(Outcome.INDEXED) or report.count(Outcome.UPDATED):
            await session.store.optimize(session.kb.collection)
    return report, plan.recorded_now()


def report_pass(
    console: Console, as_json: bool, number: int, summary: RunSummary, plan: SessionPlan
) -> None:
    """One line for the pass on stdout (`12:03:04 pass 3: 2 indexed, 1 pruned (0.4s)`), then
    each failed, skipped, removed or pruned path with its reason on stderr; with `as_json`,
    one JSON object with the counts and those paths."""
    report = summary.report
    counts = {o.value: report.count(o) for o in Outcome}
    counts["skipped"] += len(summary.skipped)
    seconds = summary.seconds
    if as_json:
        print_json({"pass": number, **counts, **summary.paths_json(), "seconds": round(seconds, 3)})
        return
    done = ", ".join(f"{n:,} {outcome}" for outcome, n in counts.items() if n)
    stamp = datetime.now().strftime("%H:%M:%S")
    print(f"{stamp} pass {number}: {done} ({duration(seconds)})", flush=True)
    summary.print_paths(console)
    summary.print_notes(console, plan.settled.embedding_model)
    sys.stderr.flush()
