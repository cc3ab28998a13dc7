"""Chat models: the base contract, an OpenAI-compatible client and a scripted stand-in."""

from archivist.model.base import ChatModelBase
from archivist.model.delta import ChatDelta, ChatDeltaAccumulator, ToolCallDelta, accumulate
from archivist.model.errors import (
    ChatModelAPIError,
    ChatModelConnectionError,
    ChatModelError,
    ChatModelResponseError,
)
from archivist.model.openai_formatter import OpenAIChatFormatter
from archivist.model.openai_model import OpenAIChatModel
from archivist.model.response import ChatResponse, ChatUsage
from archivist.model.scripted import ScriptedCall, ScriptedChatModel

__all__ = [
    "ChatDelta",
    "ChatDeltaAccumulator",
    "ChatModelAPIError",
    "ChatModelBase",
    "ChatModelConnectionError",
    "ChatModelError",
    "ChatModelResponseError",
    "ChatResponse",
    "ChatUsage",
    "OpenAIChatFormatter",
    "OpenAIChatModel",
    "ScriptedCall",
    "ScriptedChatModel",
    "ToolCallDelta",
    "accumulate",
]
