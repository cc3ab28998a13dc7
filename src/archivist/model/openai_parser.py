"""Reads the OpenAI chat-completions wire format: full responses, stream chunks, errors."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

from archivist.message import TextBlock, ToolUseBlock
from archivist.model.arguments import parse_tool_arguments
from archivist.model.delta import ChatDelta, ToolCallDelta
from archivist.model.errors import ChatModelAPIError, ChatModelResponseError
from archivist.model.response import ChatResponse, ChatUsage


def decode_json(text: str, what: str) -> Any:
    """Parse JSON from the provider, or fail naming what was expected."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ChatModelResponseError(
            f"{what} is not valid JSON ({exc.msg}): {text[:200]!r}"
        ) from exc


def parse_completion(body: Any) -> ChatResponse:
    """A `chat.completion` object -> ChatResponse (first choice)."""
    with _malformed("chat completion", body):
        return _parse_completion(body)


def parse_chunk(body: Any) -> ChatDelta:
    """A `chat.completion.chunk` object -> ChatDelta. A chunk with no choices (the usage
    chunk sent with `stream_options.include_usage`) gives a delta with usage only."""
    with _malformed("stream chunk", body):
        return _parse_chunk(body)


@contextmanager
def _malformed(what: str, body: Any) -> Iterator[None]:
    """Fields of the wrong type surface as ChatModelResponseError, like missing ones."""
    try:
        yield
    except (ValidationError, TypeError, ValueError, AttributeError) as exc:
        raise ChatModelResponseError(f"malformed {what} ({exc}): {_short(body)}") from exc


def _parse_completion(body: Any) -> ChatResponse:
    choice = _first_choice(body, "chat completion")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ChatModelResponseError(
            f"chat completion choice has no message object: {_short(choice)}"
        )
    content: list[TextBlock | ToolUseBlock] = []
    text = _message_text(message)
    if text:
        content.append(TextBlock(text=text))
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ChatModelResponseError(f"tool call without a function name: {_short(call)}")
        arguments = function.get("arguments") or ""
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        content.append(
            ToolUseBlock(
                id=str(call.get("id") or f"call_{uuid.uuid4().hex}"),
                name=function["name"],
                input=parse_tool_arguments(function["name"], arguments),
            )
        )
    return ChatResponse(
        content=content,
        usage=parse_usage(body.get("usage")),
        stop_reason=choice.get("finish_reason"),
    )


def _parse_chunk(body: Any) -> ChatDelta:
    if not isinstance(body, dict):
        raise ChatModelResponseError(f"stream chunk is not a JSON object: {_short(body)}")
    if isinstance(body.get("error"), dict):
        raise api_error_from_body(200, body)
    usage = parse_usage(body.get("usage"))
    choices = body.get("choices")
    if not choices:
        if choices is None and usage is None:
            raise ChatModelResponseError(f"stream chunk has no choices: {_short(body)}")
        return ChatDelta(usage=usage)
    choice = choices[0]
    delta = choice.get("delta") if isinstance(choice, dict) else None
    if delta is None:
        delta = {}
    if not isinstance(delta, dict):
        raise ChatModelResponseError(f"stream chunk delta is not an object: {_short(choice)}")
    fragments: list[ToolCallDelta] = []
    for position, call in enumerate(delta.get("tool_calls") or []):
        if not isinstance(call, dict):
            raise ChatModelResponseError(f"streamed tool call is not an object: {_short(call)}")
        function = call.get("function") or {}
        fragments.append(
            ToolCallDelta(
                index=call.get("index", position),
                id=call.get("id") or None,
                name=function.get("name") or None,
                arguments=function.get("arguments") or "",
            )
        )
    return ChatDelta(
        text=_message_text(delta),
        tool_calls=fragments,
        usage=usage,
        stop_reason=choice.get("finish_reason"),
    )


def parse_usage(usage: Any) -> ChatUsage | None:
    """`{"prompt_tokens", "completion_tokens", ...}` -> ChatUsage; None when absent."""
    if not isinstance(usage, dict):
        return None
    return ChatUsage(
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
    )


def api_error_from_body(status_code: int, body: Any) -> ChatModelAPIError:
    """The provider's `{"error": {"message", "type", "code"}}` (or any body) as an exception."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = error.get("code")
        return ChatModelAPIError(
            status_code,
            str(error.get("message") or _short(error)),
            code=str(code) if code is not None else None,
            error_type=error.get("type"),
        )
    if isinstance(error, str):
        return ChatModelAPIError(status_code, error)
    return ChatModelAPIError(
        status_code, _short(body) if body not in (None, "") else "(empty body)"
    )


def _first_choice(body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ChatModelResponseError(f"{what} is not a JSON object: {_short(body)}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ChatModelResponseError(f"{what} has no choices: {_short(body)}")
    return choices[0]


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        # Some compatible servers send content as a list of parts.
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if isinstance(content, str):
        return content
    refusal = message.get("refusal")
    return refusal if isinstance(refusal, str) else ""


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 200 else text[:200] + "..."
