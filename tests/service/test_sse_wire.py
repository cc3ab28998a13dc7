"""An answer's events on the wire: the sessions router frames what `service.chat` streams
(events as JSON text, None for a quiet spell) as Server-Sent Events, byte for byte as before
the framing moved out of chat.py, and closing the response's stream cancels the run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from archivist.service import chat
from archivist.service.chat import ChatEvent, Emit, stream_events
from archivist.service.routers.sessions import sse_wire


async def _events(items: list[ChatEvent | None]) -> AsyncGenerator[ChatEvent | None, None]:
    for item in items:
        yield item


async def test_events_and_quiet_spells_are_framed_as_server_sent_events() -> None:
    items = [ChatEvent("delta", '{"text": "grün"}'), None, ChatEvent("done", "{}")]
    wire = [chunk async for chunk in sse_wire(_events(items))]
    assert wire == [
        'event: delta\ndata: {"text": "grün"}\n\n'.encode(),
        b": ping\n\n",
        b"event: done\ndata: {}\n\n",
    ]


async def test_closing_the_wire_closes_the_events_at_once() -> None:
    closed = asyncio.Event()

    async def endless() -> AsyncGenerator[ChatEvent | None, None]:
        try:
            while True:
                yield None
        finally:
            closed.set()

    wire = sse_wire(endless())
    assert await anext(wire) == b": ping\n\n"
    await wire.aclose()
    assert closed.is_set()


class _SlowRun:
    """A stand-in for ChatRun: one delta after a quiet spell, then done; or it hangs."""

    session_id = "s1"

    def __init__(self, quiet: float, hang: bool = False) -> None:
        self.quiet = quiet
        self.hang = hang
        self.cancelled = False

    async def run(self, emit: Emit) -> None:
        try:
            await asyncio.sleep(3600 if self.hang else self.quiet)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        emit("delta", {"text": "é"})
        emit("done", {"content": "é", "citations": []})


async def test_a_quiet_model_gets_keep_alives_and_json_is_kept_unescaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(chat, "KEEPALIVE_SECONDS", 0.05)
    released: list[bool] = []
    run: Any = _SlowRun(quiet=0.2)
    items = [item async for item in stream_events(run, lambda: released.append(True))]
    assert None in items[:-2]
    assert items[-2:] == [
        ChatEvent("delta", '{"text": "é"}'),
        ChatEvent("done", '{"content": "é", "citations": []}'),
    ]
    assert released == [True]


async def test_a_client_going_away_cancels_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chat, "KEEPALIVE_SECONDS", 0.01)
    run: Any = _SlowRun(quiet=0, hang=True)
    released: list[bool] = []
    wire = sse_wire(stream_events(run, lambda: released.append(True)))
    assert await anext(wire) == b": ping\n\n"
    await wire.aclose()
    assert run.cancelled
    assert released == [True]  # a cancelled run ends its session's answering mark too
