"""Streaming pieces of a ChatResponse and the accumulator that puts them back together."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from archivist.message import TextBlock, ToolUseBlock
from archivist.model.arguments import parse_tool_arguments
from archivist.model.errors import ChatModelResponseError
from archivist.model.response import ChatResponse, ChatUsage


class ToolCallDelta(BaseModel):
    """A fragment of the tool call at `index`: id and name usually come first, then
    `arguments` arrives as consecutive pieces of one JSON string."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0)
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class ChatDelta(BaseModel):
    """One streamed increment: new text, tool-call fragments, and (at the end) usage and stop."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    tool_calls: list[ToolCallDelta] = Field(default_factory=list)
    usage: ChatUsage | None = None
    stop_reason: str | None = None


class _Slot:
    def __init__(self, call_id: str | None) -> None:
        self.id = call_id
        self.name = ""
        self.arguments: list[str] = []


class ChatDeltaAccumulator:
    """Adds up ChatDeltas; `response()` is the ChatResponse the whole stream stands for.

    Fragments are matched to calls by `index`. A fragment carrying a new id at an index
    already taken opens a new call, since some servers reuse index 0 for parallel calls.
    """

    def __init__(self) -> None:
        self._text: list[str] = []
        self._slots: list[_Slot] = []
        self._slot_of_index: dict[int, _Slot] = {}
        self._usage: ChatUsage | None = None
        self._stop_reason: str | None = None

    def add(self, delta: ChatDelta) -> None:
        """Fold one delta in."""
        if delta.text:
            self._text.append(delta.text)
        for fragment in delta.tool_calls:
            slot = self._slot_of_index.get(fragment.index)
            if slot is None or (fragment.id and slot.id and fragment.id != slot.id):
                slot = _Slot(fragment.id)
                self._slots.append(slot)
                self._slot_of_index[fragment.index] = slot
            if fragment.id and not slot.id:
                slot.id = fragment.id
            # Names normally come whole; a server that splits them sends pieces, and
            # one that repeats the whole name on every fragment must not double it.
            if fragment.name and fragment.name != slot.name:
                slot.name += fragment.name
            if fragment.arguments:
                slot.arguments.append(fragment.arguments)
        if delta.usage is not None:
            self._usage = delta.usage
        if delta.stop_reason is not None:
            self._stop_reason = delta.stop_reason

    @property
    def text(self) -> str:
        """The text received so far."""
        return "".join(self._text)

    def response(self) -> ChatResponse:
        """The response the deltas so far add up to; tool calls follow the text."""
        content: list[TextBlock | ToolUseBlock] = []
        if self._text:
            content.append(TextBlock(text=self.text))
        for slot in self._slots:
            if not slot.name:
                raise ChatModelResponseError("streamed tool call never received a function name")
            content.append(
                ToolUseBlock(
                    id=slot.id or f"call_{uuid.uuid4().hex}",
                    name=slot.name,
                    input=parse_tool_arguments(slot.name, "".join(slot.arguments)),
                )
            )
        return ChatResponse(content=content, usage=self._usage, stop_reason=self._stop_reason)


def accumulate(deltas: Iterable[ChatDelta]) -> ChatResponse:
    """The ChatResponse a finished sequence of deltas stands for."""
    accumulator = ChatDeltaAccumulator()
    for delta in deltas:
        accumulator.add(delta)
    return accumulator.response()
