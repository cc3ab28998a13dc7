"""How long a chat request waits before it is retried (the shared provider retry policy)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from archivist._http_retry import backoff_delay, is_retryable_status, retry_after_seconds

__all__ = ["RetryPolicy", "is_retryable_status"]


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter, overridden by the server's own Retry-After."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 30.0

    def delay(self, attempt: int, headers: httpx.Headers | None = None) -> float:
        """Seconds to wait before retry number `attempt` (0 = first retry)."""
        requested = retry_after_seconds(headers) if headers is not None else None
        return backoff_delay(attempt, self.base_delay, self.max_delay, requested)
