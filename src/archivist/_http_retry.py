"""When a call to a model provider is worth retrying and how long to wait: one policy for the
embedding clients and the chat clients alike."""

from __future__ import annotations

import email.utils
import logging
import random
import time

import httpx

logger = logging.getLogger("archivist.retry")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
"""Timeout, conflict, too early, rate limit; every 5xx is retryable as well."""


FAIL_FAST_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "Arrearage"})
"""Provider error codes that no wait will cure (quota spent, billing limit, account in arrears),
even when they come with a retryable status such as 429."""


def is_retryable_status(status_code: int) -> bool:
    """Whether an HTTP status is a transient failure worth another try."""
    return status_code in RETRYABLE_STATUS or status_code >= 500


def should_retry(status_code: int, error_code: str | None) -> bool:
    """The one retry decision for a provider's error answer: a transient status whose error
    code is not one of `FAIL_FAST_CODES`."""
    return is_retryable_status(status_code) and error_code not in FAIL_FAST_CODES


def retry_after_seconds(headers: httpx.Headers) -> float | None:
    """The wait a response asks for: `retry-after-ms`, or `Retry-After` as seconds or a date."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(
    attempt: int, base_delay: float, max_delay: float, retry_after: float | None = None
) -> float:
    """Seconds before retry number `attempt` (0-based).

    The server's `retry_after` wins (capped at `max_delay`); otherwise the delay doubles each
    attempt, capped, with half of it randomised so parallel callers do not retry in lockstep.
    """
    if retry_after is not None and retry_after >= 0:
        return min(float(retry_after), max_delay)
    ceiling = min(max_delay, base_delay * 2.0**attempt)
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def announce_retry(service: str, reason: object, delay: float, attempt: int, retries: int) -> None:
    """Say (as a warning on the `archivist.retry` logger) that `service` failed with `reason`
    and is tried again in `delay` seconds: attempt `attempt + 2` of `retries + 1`."""
    logger.warning(
        "%s: %s; retrying in %.1f s (attempt %d/%d)",
        service,
        one_line(str(reason)),
        delay,
        attempt + 2,
        retries + 1,
    )


def one_line(text: str, limit: int = 240) -> str:
    """`text` squeezed onto one line and cut to `limit` characters (an HTML error page too)."""
    squeezed = " ".join(text.split())
    return squeezed if len(squeezed) <= limit else squeezed[: limit - 1] + "…"
