"""Fixtures of the provider HTTP-layer tests."""

from __future__ import annotations

import pytest

from fake_clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    """Records the waits a client's retries ask for instead of sleeping them."""
    return FakeClock()
