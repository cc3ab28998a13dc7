"""A clock for retry tests: records every wait instead of sleeping, and lets time advance."""

from __future__ import annotations


class FakeClock:
    """`sleep` records the seconds and moves `now()` forward by them; nothing really waits."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.sleeps: list[float] = []
        self.time = start

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.time += seconds

    def now(self) -> float:
        return self.time
