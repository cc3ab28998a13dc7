"""Which failures are retried, and how long to wait before the next attempt."""

from __future__ import annotations

import asyncio

from archivist._http_retry import backoff_delay as shared_backoff
from archivist._http_retry import should_retry
from archivist.embedding.errors import EmbeddingAPIError, TransientEmbeddingError

sleep = asyncio.sleep
"""The sleep the retry loop awaits; tests replace it to observe delays without waiting."""


def is_transient(error: BaseException) -> bool:
    """True for rate limits, server errors and timeouts (unless the provider's error code says
    no wait will help); False for everything else."""
    if isinstance(error, TransientEmbeddingError | TimeoutError):
        return True
    if isinstance(error, EmbeddingAPIError) and error.status is not None:
        return should_retry(error.status, error.code)
    return False


def backoff_delay(attempt: int, error: BaseException, base_delay: float, max_delay: float) -> float:
    """Seconds to wait before retry number `attempt` (0-based); a provider's `retry_after` wins."""
    retry_after: object = getattr(error, "retry_after", None)
    requested = float(retry_after) if isinstance(retry_after, int | float) else None
    return shared_backoff(attempt, base_delay, max_delay, requested)
