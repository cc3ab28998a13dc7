"""Events an agent streams while it replies, so a UI can render progress as it happens.

Every event has `type` (its discriminator), `id`, `created_at` (UTC), `agent` (the agent's
name) and `reply_id` (shared by all events of one reply). Middlewares may leave `agent` and
`reply_id` empty: `ReplyContext.emit` fills them in.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from archivist.message import HintBlock, Msg, ToolResultBlock, ToolUseBlock
from archivist.message.usage import ChatUsage


class EventBase(BaseModel):
    """Fields every event carries."""

    model_config = ConfigDict(extra="forbid")

    type: str
    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    agent: str = ""
    reply_id: str = ""


class ReplyStart(EventBase):
    """A reply began; `input` is what it was asked to answer (empty when called with None)."""

    type: Literal["reply_start"] = "reply_start"
    input: list[Msg] = Field(default_factory=list)


class ReasoningStart(EventBase):
    """The model is about to be called; `iteration` 0 is the reply's first reasoning step."""

    type: Literal["reasoning_start"] = "reasoning_start"
    iteration: int


class TextDelta(EventBase):
    """A piece of the answer text as the model streams it."""

    type: Literal["text_delta"] = "text_delta"
    iteration: int
    delta: str


class ReasoningEnd(EventBase):
    """A reasoning step finished; `msg` is the assistant message it produced."""

    type: Literal["reasoning_end"] = "reasoning_end"
    iteration: int
    msg: Msg
    usage: ChatUsage | None = None


class ToolCall(EventBase):
    """The agent is about to run a tool call the model asked for."""

    type: Literal["tool_call"] = "tool_call"
    iteration: int
    tool_call: ToolUseBlock


class ToolResult(EventBase):
    """A tool call finished (or failed: `result.is_error`); answers `result.id`."""

    type: Literal["tool_result"] = "tool_result"
    iteration: int
    result: ToolResultBlock


class HintBlockEvent(EventBase):
    """Context was injected for the model (e.g. retrieved passages), shown to the user too.

    `source` names who injected it (e.g. "rag"), `knowledge_bases` the knowledge bases that
    were searched, `query` what they were searched with.
    """

    type: Literal["hint"] = "hint"
    hint: HintBlock
    source: str | None = None
    knowledge_bases: list[str] = Field(default_factory=list)
    query: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class ReplyEnd(EventBase):
    """The reply is done; `msg` is what `reply()` returns, `usage` the sum over its calls."""

    type: Literal["reply_end"] = "reply_end"
    msg: Msg
    usage: ChatUsage | None = None


class Error(EventBase):
    """The reply failed; the exception is raised to the caller right after this event."""

    type: Literal["error"] = "error"
    error_type: str
    message: str


Event = Annotated[
    ReplyStart
    | ReasoningStart
    | TextDelta
    | ReasoningEnd
    | ToolCall
    | ToolResult
    | HintBlockEvent
    | ReplyEnd
    | Error,
    Field(discriminator="type"),
]
