"""`ChatUsage`: the tokens one chat-model call consumed, which responses and events both carry."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ChatUsage(BaseModel):
    """Tokens a call consumed, as reported by the provider."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: ChatUsage) -> ChatUsage:
        return ChatUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )
