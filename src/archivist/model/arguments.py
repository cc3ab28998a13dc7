"""Tool-call arguments travel as a JSON string; a ToolUseBlock holds them as a dict."""

from __future__ import annotations

import json
from typing import Any

from archivist.model.errors import ChatModelResponseError


def parse_tool_arguments(tool_name: str, raw: str) -> dict[str, Any]:
    """Decode one call's arguments; empty means no arguments, anything but an object is an error."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ChatModelResponseError(
            f"model sent arguments for tool {tool_name!r} that are not valid JSON "
            f"({exc.msg}): {raw[:200]!r}"
        ) from exc
    if not isinstance(value, dict):
        raise ChatModelResponseError(
            f"model sent arguments for tool {tool_name!r} that are not a JSON object: {raw[:200]!r}"
        )
    return value
