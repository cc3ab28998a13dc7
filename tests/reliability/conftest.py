"""Shared setup of the reliability tests: a hard per-test time limit (not for `heavy` tests,
which pyproject.toml declares)."""

from __future__ import annotations

import faulthandler
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # malformed.py

# A test that runs this long is hung (a C library holding the GIL, a thread that never
# returns): dump every thread's stack and end the run rather than stall CI.
HARD_TIMEOUT_SECONDS = 300


@pytest.fixture(autouse=True)
def _hard_timeout(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("heavy"):  # heavy tests keep their own limits
        yield
        return
    faulthandler.dump_traceback_later(HARD_TIMEOUT_SECONDS, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
