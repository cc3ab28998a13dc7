"""Fixtures of the agent-layer tests."""

from __future__ import annotations

import pytest
from openai_stand_in import OpenAIStandIn

from fake_clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    """Records the backoff waits a model asks for instead of sleeping them."""
    return FakeClock()


@pytest.fixture
def stand_in(clock: FakeClock) -> OpenAIStandIn:
    return OpenAIStandIn(clock)
