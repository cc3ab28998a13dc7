"""Errors a chat model raises: the provider said no, or said something unreadable (defined
in `archivist.errors`)."""

from __future__ import annotations

from archivist.errors import (
    ChatModelAPIError,
    ChatModelConnectionError,
    ChatModelError,
    ChatModelResponseError,
)

__all__ = [
    "ChatModelAPIError",
    "ChatModelConnectionError",
    "ChatModelError",
    "ChatModelResponseError",
]
