"""The clock a provider client waits on and reads the time from; tests inject a fake one."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    """Waits between retries and tells the wall time (to read an HTTP-date `Retry-After`)."""

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` before the next attempt."""
        ...

    def now(self) -> float:
        """The current wall time as a POSIX timestamp."""
        ...


class SystemClock:
    """The real clock: `asyncio.sleep` and `time.time`."""

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def now(self) -> float:
        return time.time()


SYSTEM_CLOCK: Clock = SystemClock()
"""The clock of every client that was not given one."""
