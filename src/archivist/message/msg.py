"""`Msg`: one turn of a conversation."""

from __future__ import annotations

import builtins
from typing import Any, Literal

from pydantic import Field, field_validator

from archivist.message.block import ContentBlock, TextBlock, _Block

Role = Literal["system", "user", "assistant"]


class Msg(_Block):
    """A message from `name` in `role`; a plain string content becomes one TextBlock."""

    type: Literal["msg"] = "msg"
    name: str
    content: list[ContentBlock]
    role: Role
    metadata: dict[str, Any] = Field(default_factory=dict)

    def __init__(
        self,
        name: str,
        content: str | list[Any],
        role: Role,
        **data: Any,
    ) -> None:
        data.update(name=name, content=content, role=role)
        super().__init__(**data)

    @field_validator("content", mode="before")
    @classmethod
    def _wrap_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [TextBlock(text=value)]
        return value

    def get_text_content(self) -> str:
        """The text of all TextBlocks, joined by newlines."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))

    def get_blocks(self, block_type: builtins.type[Any]) -> list[Any]:
        """The content blocks of one type, in order."""
        return [b for b in self.content if isinstance(b, block_type)]
