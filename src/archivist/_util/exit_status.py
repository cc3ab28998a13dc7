"""How a child process ended, in words for an error message."""

from __future__ import annotations

import signal


def describe_exit(code: int) -> str:
    """`code` (a `returncode`: negative for a signal) as "exit status N" or "killed by SIGX"."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"
