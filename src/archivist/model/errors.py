"""Errors a chat model raises: the provider said no, or said something unreadable."""

from __future__ import annotations


class ChatModelError(Exception):
    """Base class of every chat-model failure."""


class ChatModelAPIError(ChatModelError):
    """The provider answered with an error status; `message` is the provider's own text and
    `retry_after` the seconds it asked to wait before another try, when it asked."""

    def __init__(
        self,
        status_code: int,
        message: str,
        *,
        code: str | None = None,
        error_type: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status_code = status_code
        self.retry_after = retry_after
        self.message = message
        self.code = code
        self.error_type = error_type
        label = f" ({code or error_type})" if (code or error_type) else ""
        super().__init__(f"chat model API error {status_code}{label}: {message}")


class ChatModelConnectionError(ChatModelError):
    """The provider could not be reached: connection refused or dropped, or no answer in time."""


class ChatModelResponseError(ChatModelError):
    """The provider's answer does not follow the wire format (bad JSON, missing fields)."""
