"""The one retry rule: which answers are retried, how long a wait is, what is logged."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from archivist._http.retry import (
    FAIL_FAST_CODES,
    RetryPolicy,
    call_with_retries,
    retry_after_seconds,
    should_retry,
)
from fake_clock import FakeClock


@pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 502, 503, 504, 529])
def test_transient_statuses_are_retried_unless_the_code_says_no_wait_helps(status: int) -> None:
    assert should_retry(status, None)
    assert should_retry(status, "rate_limit_exceeded")
    for code in FAIL_FAST_CODES:
        assert not should_retry(status, code)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_client_errors_are_not_retried(status: int) -> None:
    assert not should_retry(status, None)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "-5"}, 0.0),
        ({"retry-after-ms": "oops", "Retry-After": "2"}, 2.0),
        ({"Retry-After": "Thu, 14 Nov 2023 22:14:00 GMT"}, 100.0),
    ],
    ids=["none", "garbage", "negative", "bad-ms-falls-back", "http-date"],
)
def test_retry_after_parsing(headers: dict[str, str], expected: float | None) -> None:
    now = 1_699_999_940.0  # 22:12:20 GMT; the date in the header is 100 s later
    assert retry_after_seconds(httpx.Headers(headers), now) == expected


@pytest.mark.parametrize(
    ("setting", "value", "name"),
    [
        ("max_retries", -1, "max_retries"),
        ("max_retries", True, "max_retries"),
        ("base_delay", -0.5, "retry_base_delay"),
        ("max_delay", "1", "retry_max_delay"),
    ],
)
def test_bad_policy_settings_name_the_argument(setting: str, value: object, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        RetryPolicy(**{setting: value})  # type: ignore[arg-type]


class Flaky(Exception):
    retry_after: float | None = None


async def test_each_retry_is_one_warning_line_on_archivist_retry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    failures = [Flaky("busy\n<html>\n  overloaded </html>"), Flaky("busy again")]

    async def call() -> str:
        if failures:
            raise failures.pop(0)
        return "done"

    with caplog.at_level(logging.WARNING, logger="archivist.retry"):
        result = await call_with_retries(
            call,
            policy=RetryPolicy(max_retries=3, base_delay=1.0, max_delay=8.0),
            clock=clock,
            service="svc",
            retryable=lambda error: isinstance(error, Flaky),
        )
    assert result == "done"
    messages = [r.getMessage() for r in caplog.records if r.name == "archivist.retry"]
    assert len(messages) == 2
    assert messages[0].startswith("svc: busy <html> overloaded </html>; retrying in ")
    assert messages[0].endswith("(attempt 2/4)") and messages[1].endswith("(attempt 3/4)")
    assert 0.5 <= clock.sleeps[0] <= 1.0 and 1.0 <= clock.sleeps[1] <= 2.0


async def run_always_failing(
    error: BaseException, *, retryable: bool
) -> tuple[int, FakeClock, BaseException | None]:
    """Run a call that always raises `error` through the loop: (calls made, the clock, what
    the loop raised)."""
    clock = FakeClock()
    calls = 0

    async def call() -> None:
        nonlocal calls
        calls += 1
        raise error

    raised: BaseException | None = None
    try:
        await call_with_retries(
            call,
            policy=RetryPolicy(),
            clock=clock,
            service="svc",
            retryable=lambda _: retryable,
        )
    except BaseException as caught:
        raised = caught
    return calls, clock, raised


async def test_an_error_the_rule_rejects_is_raised_at_once_without_a_note() -> None:
    error = ValueError("bad request")
    calls, clock, raised = await run_always_failing(error, retryable=False)
    assert raised is error
    assert calls == 1 and clock.sleeps == []
    assert not getattr(error, "__notes__", [])


async def test_cancellation_is_never_retried() -> None:
    error = asyncio.CancelledError()
    calls, clock, raised = await run_always_failing(error, retryable=True)
    assert raised is error
    assert calls == 1 and clock.sleeps == []


async def test_retries_stop_after_max_retries_with_a_note() -> None:
    error = Flaky("busy")
    calls, clock, raised = await run_always_failing(error, retryable=True)
    assert raised is error
    assert calls == 4 and len(clock.sleeps) == 3
    assert error.__notes__ == ["svc: gave up after 4 attempts"]
