"""Fixtures of the agent-layer tests."""

from __future__ import annotations

import pytest
from openai_stand_in import OpenAIStandIn


@pytest.fixture
def stand_in() -> OpenAIStandIn:
    return OpenAIStandIn()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Backoff waits the OpenAI model asked for, recorded instead of slept."""
    recorded: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr("archivist.model.openai_model._sleep", fake_sleep)
    return recorded
