"""Progress of `archivist index`: a live display on a terminal, and a plain line every few
seconds where a live display cannot draw (a pipe, a CI log)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TextIO

from rich.cells import cell_len, get_character_cell_size
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.filesize import decimal
from rich.progress import Progress, ProgressColumn, Task, TaskID
from rich.progress_bar import ProgressBar
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from archivist.cli.output import count, display_path


def duration(seconds: float) -> str:
    """`seconds` for people: `0.4s`, `42s`, `3m05s`, `1h02m`."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class PeriodicProgress:
    """Writes `line()` (e.g. `archivist: indexing 12/322 files, 4,512 chunks, 1m05s: WHAT`)
    to `stream` every `interval` seconds from a background thread while the block runs, so
    logs of CI jobs and pipes (where the terminal's live display is off) show that a long run
    is alive, even inside one large file."""

    def __init__(self, stream: TextIO, interval: float, line: Callable[[], str]) -> None:
        self.stream = stream
        self.interval = interval
        self.line = line
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> PeriodicProgress:
        self._thread = threading.Thread(target=self._run, name="archivist-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.stream.write(self.line() + "\n")
                self.stream.flush()
            except (OSError, ValueError):  # the reader went away or the stream was closed
                return


SPEED_WINDOW = 60.0
"""Seconds of recent progress the time left of a step is estimated from."""


class IndexProgress:
    """What `archivist index` shows while it runs. On a terminal, a live display of two lines:
    the run (files done of all, chunks written, time) and the step under way: reading a file
    (its size, a spinner and the time it takes: a large file is parsed and chunked before
    any chunk is written), embedding (chunks written of the step's total, the percentage and
    the time left) or OCR (pages). Elsewhere, with `interval`, the same as one line every
    `interval` seconds on `stream`. Counts and times are never cut: a narrow terminal drops
    the bar and shortens the path."""

    def __init__(
        self,
        console: Console,
        total_files: int,
        *,
        disable: bool = False,
        interval: float = 0.0,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.progress = Progress(
            _RowColumn(),
            console=console,
            transient=True,
            disable=disable or not console.is_terminal,
            get_time=clock,
            speed_estimate_period=SPEED_WINDOW,
        )
        self.run = self.progress.add_task("indexing", total=total_files, chunks=0)
        self.step: TaskID | None = None
        self.done_chunks = 0
        self._in_flight: dict[str, int] = {}  # path → chunks written, until the file is done
        self._step_written: dict[str, int] = {}  # path → chunks written in this step
        self.periodic: PeriodicProgress | None = None
        if interval > 0 and stream is not None and not console.is_terminal:
            self.periodic = PeriodicProgress(stream, interval, self.line)

    def __enter__(self) -> IndexProgress:
        self.progress.__enter__()
        if self.periodic is not None:
            self.periodic.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if self.periodic is not None:
                self.periodic.__exit__(kind, exc, traceback)
        finally:
            self.progress.__exit__(kind, exc, traceback)

    def _new_step(
        self,
        action: str,
        subject: str,
        total: int | None,
        *,
        unit: str = "",
        note: str = "",
        files: int = 0,
    ) -> None:
        """Show `action subject` as the step under way, its clock and counts started anew:
        `total` things (None: unknown) counted in `unit`, or a `note` (a file's size)."""
        if self.step is not None:
            self.progress.remove_task(self.step)
        self.step = self.progress.add_task(
            action, total=total, subject=subject, unit=unit, note=note, size=note, files=files
        )

    def reading(self, path: Path) -> None:
        """A file is taken up: read, parsed and chunked (or found unchanged)."""
        try:
            size = decimal(path.stat().st_size)
        except OSError:
            size = ""
        self._new_step("reading", display_path(path), None, note=size)

    def cut(self, path: str, chunks: int) -> None:
        """`chunks` chunks are cut so far from the file being read."""
        step = self._task(self.step)
        if step is not None and step.description == "reading":
            figures = (str(step.fields["size"]), f"{count(chunks, 'chunk')} cut")
            self.progress.update(step.id, note=", ".join(f for f in figures if f))

    def ocr_page(self, name: str, page: int | None, pages: int | None) -> None:
        """OCR reads page `page` of `pages` (an image: no page) of file `name`."""
        subject = display_path(name)
        step = self._task(self.step)
        if step is None or step.description != "OCR of" or step.fields["subject"] != subject:
            self._new_step("OCR of", subject, pages or None, unit="page")
        if self.step is not None and page and pages:
            self.progress.update(self.step, completed=page - 1)

    def embedding(self, files: int, chunks: int) -> None:
        """The chunks of `files` files are being embedded and written."""
        self._step_written = {}
        self._new_step("embedding", count(files, "file"), chunks, unit="chunk", files=files)

    def written(self, path: str, written: int, total: int) -> None:
        """`written` of the `total` chunks of file `path` are stored."""
        self._in_flight[path] = written
        self._step_written[path] = written
        step = self._task(self.step)
        if step is not None and step.description == "embedding":
            if step.fields.get("files") == 1:
                step.fields["subject"] = display_path(path)
            self.progress.update(step.id, completed=sum(self._step_written.values()))
        self.progress.update(self.run, chunks=self.chunks)

    def file_done(self, chunks: int, path: str, counted: bool) -> None:
        """A file is finished with `chunks` chunks written; `counted`: it is one of the files
        walked (not a document pruned or removed)."""
        self._in_flight.pop(path, None)
        self.done_chunks += chunks
        self.progress.update(self.run, advance=1 if counted else 0, chunks=self.chunks)

    @property
    def chunks(self) -> int:
        """Chunks written so far in the run."""
        return self.done_chunks + sum(self._in_flight.values())

    def _task(self, task_id: TaskID | None) -> Task | None:
        return next((t for t in self.progress.tasks if t.id == task_id), None)

    def line(self) -> str:
        """The progress as one line (no newline), for a log."""
        run = self._task(self.run)
        assert run is not None
        text = (
            f"archivist: indexing {int(run.completed):,}/{int(run.total or 0):,} files, "
            f"{self.chunks:,} chunks, {duration(run.elapsed or 0.0)}"
        )
        step = self._task(self.step)
        if step is None:
            return text
        label, figures = step_parts(step)
        return f"{text}: {label}" + (f" ({', '.join(figures)})" if figures else "")


def step_parts(task: Task) -> tuple[str, list[str]]:
    """(what, [figures]) of a task: `embedding docs/big.txt`, [`12,000/53,226 chunks`, `23%`,
    `ETA 9m10s`]; the run's own task: `indexing`, [`3/12 files`, `4,512 chunks`, `1m05s`]."""
    elapsed = duration(task.elapsed or 0.0)
    if "subject" not in task.fields:  # the run
        done, total = int(task.completed), int(task.total or 0)
        return task.description, [
            f"{done:,}/{total:,} files",
            count(int(task.fields["chunks"]), "chunk"),
            elapsed,
        ]
    label = f"{task.description} {task.fields['subject']}"
    note = str(task.fields["note"])
    if task.total is None:
        return label, [figure for figure in (note, elapsed) if figure]
    left = task.time_remaining
    unit = str(task.fields["unit"])
    return label, [
        f"{int(task.completed):,}/{int(task.total):,} {unit}s",
        f"{task.percentage:.0f}%",
        f"ETA {'?' if left is None else duration(left)}",
    ]


BAR_MIN, BAR_MAX, LABEL_MIN = 10, 40, 20
"""Widths (columns) of the bar, kept only when it fits, and of the label it never squeezes
below."""


class _RowColumn(ProgressColumn):
    """One task as one line laid out to the console's width (see `_Row`)."""

    def __init__(self) -> None:
        super().__init__()
        self.spinner = Spinner("dots")

    def render(self, task: Task) -> _Row:
        return _Row(task, self.spinner.render(task.get_time()))


class _Row:
    """A task's line: spinner (a step), label, bar, figures. The figures (counts, percentage,
    times) are always whole; the label gives way to a bar of `BAR_MIN` down to `LABEL_MIN`
    columns (its path cut at the start, where folders are), then the bar goes."""

    def __init__(self, task: Task, spinner: RenderableType) -> None:
        self.task = task
        self.spinner = spinner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        task = self.task
        label, parts = step_parts(task)
        figures = "  ".join(parts)
        step = "subject" in task.fields
        lead = self.spinner if step and not task.finished else None
        room = options.max_width - cell_len(figures) - 1 - (2 if step else 0)
        natural = cell_len(label)
        if room - 1 - min(natural, LABEL_MIN) >= BAR_MIN:
            label_width = min(natural, room - 1 - BAR_MIN)
            bar_width = min(BAR_MAX, room - 1 - label_width)
        else:
            label_width, bar_width = max(0, min(natural, room)), 0
        shown = fit(label, label_width, keep=len(task.description) + 1 if step else None)
        row = Table.grid(padding=(0, 1))
        cells: list[Text | ProgressBar] = []
        if step:
            row.add_column(width=1, no_wrap=True)
            cells.append(lead if isinstance(lead, Text) else Text(" "))
        if label_width:
            row.add_column(width=label_width, no_wrap=True)
            cells.append(Text(shown, style="bold" if not step else ""))
        if bar_width:
            row.add_column(width=bar_width, no_wrap=True)
            cells.append(
                ProgressBar(
                    total=task.total,
                    completed=task.completed,
                    width=bar_width,
                    animation_time=task.get_time(),
                )
            )
        row.add_column(no_wrap=True, overflow="ellipsis")
        cells.append(Text(figures))
        row.add_row(*cells)
        yield row


def fit(text: str, width: int, keep: int | None = None) -> str:
    """`text` in at most `width` terminal columns (wide CJK characters count two): whole if
    it fits; else its first `keep` characters (e.g. `reading `) and the end of the rest after
    `…` (the end of a path names the file); else cut at the end."""
    if cell_len(text) <= width:
        return text
    if width <= 0:
        return ""
    if keep is not None:
        head = text[:keep]
        room = width - cell_len(head) - 1
        if room >= 4:
            tail = ""
            for char in reversed(text[keep:]):
                if cell_len(tail) + get_character_cell_size(char) > room:
                    break
                tail = char + tail
            return f"{head}…{tail}"
    cut = ""
    for char in text:
        if cell_len(cut) + get_character_cell_size(char) > width - 1:
            break
        cut += char
    return cut + "…"
