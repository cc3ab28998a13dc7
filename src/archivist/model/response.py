"""What a chat model returns for one call: content blocks, token usage and why it stopped."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from archivist.message import TextBlock, ToolUseBlock
from archivist.message.usage import ChatUsage

__all__ = ["ChatResponse", "ChatUsage"]


class ChatResponse(BaseModel):
    """One model turn: text and tool-call blocks in order, usage, and the stop reason.

    `stop_reason` keeps the provider's word (OpenAI: "stop", "tool_calls", "length", ...).
    """

    model_config = ConfigDict(extra="forbid")

    content: list[TextBlock | ToolUseBlock] = Field(default_factory=list)
    usage: ChatUsage | None = None
    stop_reason: str | None = None

    @property
    def text(self) -> str:
        """The text of all TextBlocks, concatenated."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> list[ToolUseBlock]:
        """The tool calls the model asked for, in order."""
        return [b for b in self.content if isinstance(b, ToolUseBlock)]
