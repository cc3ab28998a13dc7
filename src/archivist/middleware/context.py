"""What a middleware sees of the reply in progress, and how it acts on it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from archivist.event import EventBase
from archivist.message import Msg
from archivist.message.memory import Memory

EventSink = Callable[[EventBase], Awaitable[None]]


class ReplyingAgent(Protocol):
    """What a middleware may use of the agent that replies: its name and its memory."""

    @property
    def name(self) -> str: ...

    @property
    def memory(self) -> Memory: ...


class ReplyContext:
    """One reply, as passed to every middleware hook.

    - `agent`: the agent replying; `memory`: its context (add / remove messages there);
    - `input`: the reply's input messages, already in memory (empty for `reply(None)`);
      `input_msg` is the last of them;
    - `iteration`: the reasoning step, 0 for the first model call of this reply;
    - `response`: in `after_reasoning`, the assistant Msg this step produced (None when the
      model call failed); in `on_reply_end`, the reply's final Msg (None on failure);
    - `error`: the exception that is ending the reply, else None;
    - `state`: a per-reply scratch dict, e.g. to carry a message id from before_reasoning
      to after_reasoning without keeping it on the (shared) middleware object;
    - `await emit(event)`: streams an event to `reply_stream` consumers, stamped with the
      agent's name and the reply id (events emitted during `reply()` are dropped).
    """

    def __init__(
        self, agent: ReplyingAgent, inputs: list[Msg], reply_id: str, sink: EventSink
    ) -> None:
        self.agent = agent
        self.input = inputs
        self.reply_id = reply_id
        self.iteration = 0
        self.response: Msg | None = None
        self.error: BaseException | None = None
        self.state: dict[str, Any] = {}
        self._sink = sink

    @property
    def memory(self) -> Memory:
        """The agent's memory."""
        return self.agent.memory

    @property
    def input_msg(self) -> Msg | None:
        """The last input message, or None when the reply had no input."""
        return self.input[-1] if self.input else None

    async def emit(self, event: EventBase) -> None:
        """Send `event` to the reply's event stream, filling in `agent` and `reply_id`."""
        stamped = event.model_copy(
            update={
                "agent": event.agent or self.agent.name,
                "reply_id": event.reply_id or self.reply_id,
            }
        )
        await self._sink(stamped)
