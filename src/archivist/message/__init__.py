"""Messages and the content blocks they are made of."""

from archivist.message.block import (
    Base64Source,
    ContentBlock,
    DataBlock,
    HintBlock,
    MediaBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
)
from archivist.message.msg import Msg, Role

__all__ = [
    "Base64Source",
    "ContentBlock",
    "DataBlock",
    "HintBlock",
    "MediaBlock",
    "Msg",
    "Role",
    "TextBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "URLSource",
]
