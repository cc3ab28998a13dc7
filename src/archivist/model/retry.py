"""When to retry a chat request, and how long to wait first."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status_code: int) -> bool:
    """Timeouts, conflicts, rate limits and server errors are worth another try."""
    return status_code in RETRYABLE_STATUS or status_code >= 500


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter, overridden by the server's own Retry-After."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 30.0

    def delay(self, attempt: int, headers: httpx.Headers | None = None) -> float:
        """Seconds to wait before retry number `attempt` (0 = first retry)."""
        requested = retry_after_seconds(headers) if headers is not None else None
        if requested is not None:
            return min(max(requested, 0.0), self.max_delay)
        backoff = self.base_delay * 2.0**attempt
        # Jitter in [backoff/2, backoff] keeps many clients from retrying in lockstep.
        return min(backoff * (0.5 + random.random() / 2), self.max_delay)


def retry_after_seconds(headers: httpx.Headers) -> float | None:
    """`retry-after-ms`, else `Retry-After` as seconds or an HTTP date; None when absent."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()
