"""Turns whatever a tool returned into a ToolResultBlock's output: text or media blocks."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json

from archivist.message import DataBlock, MediaBlock, TextBlock


def normalize_output(value: Any) -> str | list[MediaBlock]:
    """str stays str; a Text/DataBlock or a list of only such blocks stays blocks; None is "";
    anything else becomes JSON (pydantic models, dataclasses, dates included; values JSON
    cannot express fall back to `str`)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, TextBlock | DataBlock):
        return [value]
    if (
        isinstance(value, list | tuple)
        and value
        and all(isinstance(item, TextBlock | DataBlock) for item in value)
    ):
        return list(value)
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return to_json(value, fallback=str).decode()
