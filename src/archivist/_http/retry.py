"""The one retry decision and the one retry loop of every provider client.

Built on tenacity rather than stamina: stamina's test mode and hooks are process-wide, while
each provider here takes its own injectable clock.
"""

from __future__ import annotations

import email.utils
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from archivist._http.clock import Clock
from archivist._util.text import one_line
from archivist.errors import InvalidArgumentError
from archivist.validation import check_non_negative_int

if TYPE_CHECKING:  # a local model retries without ever loading an HTTP client
    import httpx

logger = logging.getLogger("archivist.retry")

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
"""Timeout, conflict, too early, rate limit; every 5xx is retryable as well."""

FAIL_FAST_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "Arrearage"})
"""Provider error codes that no wait will cure (quota spent, billing limit, account in arrears),
even when they come with a retryable status such as 429."""


def should_retry(status_code: int, error_code: str | None) -> bool:
    """The one retry decision for a provider's error answer: a transient status (408, 409,
    425, 429, 5xx) whose error code is not one of `FAIL_FAST_CODES`."""
    transient = status_code in RETRYABLE_STATUS or status_code >= 500
    return transient and error_code not in FAIL_FAST_CODES


def retry_after_seconds(headers: httpx.Headers, now: float) -> float | None:
    """The wait a response asks for: `retry-after-ms`, or `Retry-After` as seconds or as an
    HTTP date (measured from `now`, a POSIX timestamp)."""
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
    return max(0.0, when.timestamp() - now)


def check_delay(delay: object, argument: str) -> float:
    """`delay` if it is a number of seconds >= 0, else an InvalidArgumentError naming it."""
    if not isinstance(delay, int | float) or isinstance(delay, bool) or delay < 0:
        raise InvalidArgumentError(
            f"{argument} must be a number >= 0, got {delay!r}", argument=argument
        )
    return delay


@dataclass(frozen=True)
class RetryPolicy:
    """How often to retry and how long to wait: the server's Retry-After when it gives one
    (capped at `max_delay`), else exponential backoff from `base_delay` with jitter."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 30.0

    def __post_init__(self) -> None:
        check_non_negative_int(self.max_retries, "max_retries")
        check_delay(self.base_delay, "retry_base_delay")
        check_delay(self.max_delay, "retry_max_delay")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds before retry number `attempt` (0 = the first retry).

        Half of the backoff is randomised so that parallel callers do not retry in lockstep.
        """
        if retry_after is not None and retry_after >= 0:
            return min(float(retry_after), self.max_delay)
        ceiling = min(self.max_delay, self.base_delay * 2.0**attempt)
        return ceiling / 2 + random.uniform(0, ceiling / 2)


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    clock: Clock,
    service: str,
    retryable: Callable[[BaseException], bool],
) -> T:
    """Await `call()` until it succeeds, it fails with an error `retryable` rejects, or
    `policy.max_retries` retries are spent; each wait is announced on `archivist.retry`.
    Cancellation and other non-`Exception` errors are never retried.

    The last error is raised as it is, with a note saying how many attempts were made.
    """
    attempts = 0

    async def attempt() -> T:
        nonlocal attempts
        attempts += 1
        return await call()

    retrying = AsyncRetrying(
        sleep=clock.sleep,
        stop=stop_after_attempt(policy.max_retries + 1),
        wait=lambda state: policy.delay(state.attempt_number - 1, _retry_after(state)),
        retry=retry_if_exception(lambda error: isinstance(error, Exception) and retryable(error)),
        before_sleep=lambda state: _announce(service, policy, state),
        reraise=True,
    )
    try:
        return await retrying(attempt)
    except Exception as error:
        if attempts > 1:
            error.add_note(f"{service}: gave up after {attempts} attempts")
        raise


def _retry_after(state: RetryCallState) -> float | None:
    """The `retry_after` seconds the failed attempt's error carries, if any."""
    error = state.outcome.exception() if state.outcome is not None else None
    value: object = getattr(error, "retry_after", None)
    return float(value) if isinstance(value, int | float) else None


def _announce(service: str, policy: RetryPolicy, state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    delay = state.next_action.sleep if state.next_action is not None else 0.0
    logger.warning(
        "%s: %s; retrying in %.1f s (attempt %d/%d)",
        service,
        one_line(str(error)),
        delay,
        state.attempt_number + 1,
        policy.max_retries + 1,
    )
