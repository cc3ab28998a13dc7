"""Waiting for a process a test started (a server, a worker) to be ready, never for one that
has exited: each turn looks at the process first, and its exit ends the wait at once with
its exit status and the end of its output."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from archivist._util.exit_status import describe_exit

TAIL_LINES = 40
T = TypeVar("T")


class ChildExited(RuntimeError):
    """The process exited before it was ready."""


def tail(log: Path, lines: int = TAIL_LINES) -> str:
    """The last `lines` lines of the file `log` (nothing while it does not exist)."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def wait_ready(
    process: subprocess.Popen[Any],
    what: str,
    ready: Callable[[], T],
    log: Path,
    timeout: float,
    pause: float = 0.02,
) -> T:
    """`ready()` once it is truthy while `process` runs. ChildExited as soon as the process
    has exited, TimeoutError after `timeout` s; both name `what` and end with the last
    lines of `log`, the file the process writes its output to."""
    deadline = time.monotonic() + timeout
    while True:
        code = process.poll()
        if code is not None:
            raise ChildExited(
                f"{what} ended ({describe_exit(code)}) before it was ready; the end of its "
                "output:\n"
                + tail(log)
            )
        value = ready()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{what} was not ready within {timeout:g} s; the end of its output:\n" + tail(log)
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.2)  # a quick start is seen at once, a slow one polled lightly
