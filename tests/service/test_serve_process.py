"""`archivist serve` started by the tests (`service_helpers.ServeProcess`): a service that
exits at start fails `start()` at once with its exit status and its error, rather than being
waited for until the timeout."""

from __future__ import annotations

from pathlib import Path

import pytest
from service_helpers import ServeProcess, free_port

from child_process import ChildExited


def test_a_serve_that_exits_at_start_fails_start_at_once_with_its_error(tmp_path: Path) -> None:
    serve = ServeProcess(tmp_path / "home", free_port(), "--no-such-option")
    try:
        with pytest.raises(ChildExited) as raised:
            serve.start(timeout=120)  # a wait until the timeout would be TimeoutError
    finally:
        serve.stop()
    message = str(raised.value)
    assert "archivist serve ended (exit status 2) before it was ready" in message
    assert "unrecognized arguments: --no-such-option" in message
