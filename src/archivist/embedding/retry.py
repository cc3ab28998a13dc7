"""Which failures are retried, and how long to wait before the next attempt."""

from __future__ import annotations

import asyncio
import random

from archivist.embedding.errors import EmbeddingAPIError, TransientEmbeddingError

sleep = asyncio.sleep
"""The sleep the retry loop awaits; tests replace it to observe delays without waiting."""

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})


def is_transient(error: BaseException) -> bool:
    """True for rate limits, server errors and timeouts; False for everything else."""
    if isinstance(error, TransientEmbeddingError | TimeoutError):
        return True
    if isinstance(error, EmbeddingAPIError) and error.status is not None:
        return error.status in _TRANSIENT_STATUS or error.status >= 500
    return False


def backoff_delay(attempt: int, error: BaseException, base_delay: float, max_delay: float) -> float:
    """Seconds to wait before retry number `attempt` (0-based).

    A provider's `retry_after` wins (capped at `max_delay`); otherwise the delay doubles
    each attempt, capped, with half of it randomised so parallel callers spread out.
    """
    retry_after: object = getattr(error, "retry_after", None)
    if isinstance(retry_after, int | float) and retry_after >= 0:
        return min(float(retry_after), max_delay)
    ceiling = min(max_delay, base_delay * 2.0**attempt)
    return ceiling / 2 + random.uniform(0, ceiling / 2)
