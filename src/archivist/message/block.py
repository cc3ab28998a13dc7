"""Content blocks: the typed pieces a message, a section or a chunk is made of."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


def _new_id() -> str:
    return uuid.uuid4().hex


def _now() -> datetime:
    return datetime.now(UTC)


class _Block(BaseModel):
    """Common fields of every block: a unique `id` and a UTC `created_at`."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=_new_id)
    created_at: datetime = Field(default_factory=_now)


class Base64Source(BaseModel):
    """Inline binary data, base64-encoded, with its IANA media type."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["base64"] = "base64"
    data: str
    media_type: str = Field(min_length=1)


class URLSource(BaseModel):
    """Binary data referenced by URL, with its IANA media type."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["url"] = "url"
    url: str
    media_type: str = Field(min_length=1)


Source = Annotated[Base64Source | URLSource, Field(discriminator="type")]


class TextBlock(_Block):
    """Plain text."""

    type: Literal["text"] = "text"
    text: str


class DataBlock(_Block):
    """Binary content (image, audio, video, ...) inline or by URL."""

    type: Literal["data"] = "data"
    source: Source
    name: str | None = None


MediaBlock = Annotated[TextBlock | DataBlock, Field(discriminator="type")]


class HintBlock(_Block):
    """Context injected for the model (e.g. retrieved passages), not said by anyone."""

    type: Literal["hint"] = "hint"
    hint: str | list[MediaBlock]
    source: str | None = None


class ToolUseBlock(_Block):
    """A model's request to call a tool; `id` is the tool-call id the result answers."""

    type: Literal["tool_use"] = "tool_use"
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ToolResultBlock(_Block):
    """A tool's answer to the ToolUseBlock with the same `id`."""

    type: Literal["tool_result"] = "tool_result"
    name: str
    output: str | list[MediaBlock]
    is_error: bool = False


ContentBlock = Annotated[
    TextBlock | DataBlock | HintBlock | ToolUseBlock | ToolResultBlock,
    Field(discriminator="type"),
]
