"""Events streamed by `Agent.reply_stream`."""

from archivist.event.events import (
    Error,
    Event,
    EventBase,
    HintBlockEvent,
    ReasoningEnd,
    ReasoningStart,
    ReplyEnd,
    ReplyStart,
    TextDelta,
    ToolCall,
    ToolResult,
)

__all__ = [
    "Error",
    "Event",
    "EventBase",
    "HintBlockEvent",
    "ReasoningEnd",
    "ReasoningStart",
    "ReplyEnd",
    "ReplyStart",
    "TextDelta",
    "ToolCall",
    "ToolResult",
]
