"""Waiting for a started process to be ready (tests/child_process.py): a process that has
exited ends the wait at once with its status and the end of its output, never a wait until
the timeout."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from child_process import TAIL_LINES, ChildExited, wait_ready


@contextmanager
def child(log: Path, code: str) -> Iterator[subprocess.Popen[bytes]]:
    """`python -c code`, its output (stdout and stderr) in `log`; killed after."""
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT
        )
    try:
        yield process
    finally:
        process.kill()
        process.wait(60)


def test_a_process_that_exits_ends_the_wait_at_once_with_its_status_and_last_lines(
    tmp_path: Path,
) -> None:
    log = tmp_path / "server.log"
    code = "import sys\nfor n in range(100): print(f'line {n}')\nsys.exit('no port to listen on')"
    with child(log, code) as process, pytest.raises(ChildExited) as raised:
        # Never ready: only the exit can end this wait before its 120 s.
        wait_ready(process, "the server", lambda: False, log, timeout=120)
    message = str(raised.value)
    assert message.startswith("the server ended (exit status 1) before it was ready")
    assert message.endswith("line 99\nno port to listen on")
    assert "\nline 61\n" in message and "line 60\n" not in message  # the last 40 lines
    assert len(message.splitlines()) == 1 + TAIL_LINES


def test_a_process_killed_by_a_signal_says_which(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    code = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"
    with child(log, code) as process, pytest.raises(ChildExited, match=r"ended \(killed by SIGKILL\)"):
        wait_ready(process, "the server", lambda: False, log, timeout=120)


def test_the_wait_returns_what_ready_gives_while_the_process_runs(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    code = "import time\nprint('listening on 8000', flush=True)\ntime.sleep(120)"
    with child(log, code) as process:
        found = wait_ready(
            process, "the server", lambda: "listening" in log.read_text(), log, timeout=120
        )
        assert found is True and process.poll() is None


def test_a_process_never_ready_times_out_showing_its_output(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    code = "import time\nprint('still loading', flush=True)\ntime.sleep(120)"
    with child(log, code) as process, pytest.raises(TimeoutError) as raised:
        wait_ready(process, "the server", lambda: False, log, timeout=0.5)
    assert "the server was not ready within 0.5 s" in str(raised.value)
    assert str(raised.value).endswith("still loading")
