"""Progress of a long run as a plain line every few seconds, where a live bar cannot draw."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO


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
    """Writes `archivist: indexing 12/322 files, 4,512 chunks, 1m05s: WHAT` to `stream` every
    `interval` seconds from a background thread, so logs of CI jobs and pipes (where the
    terminal's live bar is off) show that a long run is alive, even inside one large file.
    `files` counts files done, `chunks` chunks written, `current` says what is under way."""

    def __init__(
        self,
        stream: TextIO,
        interval: float,
        total_files: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.interval = interval
        self.total_files = total_files
        self.clock = clock
        self.started = clock()
        self.files = 0
        self.chunks = 0
        self.current = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def line(self) -> str:
        """The progress as one line (no newline)."""
        text = (
            f"archivist: indexing {self.files:,}/{self.total_files:,} files, "
            f"{self.chunks:,} chunks, {duration(self.clock() - self.started)}"
        )
        return f"{text}: {self.current}" if self.current else text

    def __enter__(self) -> PeriodicProgress:
        self.started = self.clock()
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
