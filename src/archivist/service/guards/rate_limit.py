"""A per-key request rate: a token bucket per API key, answered 429 with `Retry-After`.

Buckets live in this process (each replica counts its own requests); a key that has been
idle long enough to refill its bucket holds no state, so memory stays bounded by the keys
active in the last `burst / rate` seconds.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from archivist.errors import InvalidArgumentError


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """`rate` requests per second per key on average, `burst` at once."""

    def __init__(self, rate: float, burst: int) -> None:
        if rate <= 0 or burst < 1:
            raise InvalidArgumentError(
                f"rate must be > 0 and burst >= 1, got {rate}, {burst}", argument="rate"
            )
        self.rate = rate
        self.burst = burst
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()
        self._next_sweep = time.monotonic()

    def take(self, key: str) -> float:
        """Spend one request of `key`: 0 if allowed, else the seconds until it would be."""
        now = time.monotonic()
        with self._lock:
            self._sweep(now)
            bucket = self._buckets.get(key) or _Bucket(float(self.burst), now)
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now
            self._buckets[key] = bucket
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                return 0.0
            return (1 - bucket.tokens) / self.rate

    def _sweep(self, now: float) -> None:
        """Forget buckets that would be full again (idle keys)."""
        if now < self._next_sweep:
            return
        refill = self.burst / self.rate
        self._buckets = {k: b for k, b in self._buckets.items() if now - b.updated < refill}
        self._next_sweep = now + max(1.0, refill)


def retry_after(seconds: float) -> str:
    """A `Retry-After` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))
