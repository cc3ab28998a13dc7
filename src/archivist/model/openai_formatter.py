"""Turns archivist Msgs into OpenAI chat-completions `messages`.

Mapping, block by block, in order:
- system Msg -> one `system` message (text only);
- TextBlock -> a text part of a `user` / `assistant` message;
- DataBlock -> an `image_url` part (images, inline as a data URL or by URL) or an
  `input_audio` part (base64 wav/mp3) in user messages; anything else, and any media in
  system/assistant messages, becomes a short text note the model can see;
- ToolUseBlock -> an entry of the assistant message's `tool_calls`;
- ToolResultBlock -> a `tool` message answering `tool_call_id`; images it returned follow
  in a user message, since `tool` messages carry text only;
- HintBlock -> its own `user` message: the hint wrapped in `<hint>` ... `</hint>` (with a
  `source` attribute when set). A user message because several OpenAI-compatible servers
  reject `system` messages after the first; the tag tells the model it is injected context,
  not something the user said.
A message whose parts are all text is sent with a plain string content, which every
compatible server accepts.
"""

from __future__ import annotations

import html
import json
from typing import Any

from archivist.message import (
    Base64Source,
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)

_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
}


class OpenAIChatFormatter:
    """Formats Msgs, tools and tool_choice for the chat-completions request body."""

    def format_messages(self, msgs: list[Msg]) -> list[dict[str, Any]]:
        """The `messages` array for `msgs`, in order."""
        out: list[dict[str, Any]] = []
        for msg in msgs:
            out.extend(self._format_msg(msg))
        return out

    def format_tools(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Function schemas; bare `{name, description, parameters}` dicts get wrapped."""
        return [
            t if t.get("type") == "function" else {"type": "function", "function": t} for t in tools
        ]

    def format_tool_choice(self, tool_choice: str) -> str | dict[str, Any]:
        """Pass "auto", "none" and "required" through; any other string names one function."""
        if tool_choice in ("auto", "none", "required"):
            return tool_choice
        return {"type": "function", "function": {"name": tool_choice}}

    def _format_msg(self, msg: Msg) -> list[dict[str, Any]]:
        if msg.role == "system":
            return [{"role": "system", "content": self._plain_text(msg)}]
        out: list[dict[str, Any]] = []
        parts: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []

        def flush() -> None:
            if msg.role == "assistant" or calls:
                if parts or calls:
                    out.append(self._assistant(parts, calls))
            elif parts:
                out.append({"role": "user", "content": _content(parts)})
            parts.clear()
            calls.clear()

        for block in msg.content:
            if isinstance(block, TextBlock):
                parts.append({"type": "text", "text": block.text})
            elif isinstance(block, DataBlock):
                parts.append(self._media_part(block, allow_media=msg.role == "user"))
            elif isinstance(block, ToolUseBlock):
                calls.append(_tool_call(block))
            elif isinstance(block, ToolResultBlock):
                flush()
                out.extend(self._tool_result(block))
            elif isinstance(block, HintBlock):
                flush()
                out.append(self._hint(block))
        flush()
        return out

    def _assistant(
        self, parts: list[dict[str, Any]], calls: list[dict[str, Any]]
    ) -> dict[str, Any]:
        text = "\n".join(p["text"] for p in parts)
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = list(calls)
        return message

    def _tool_result(self, block: ToolResultBlock) -> list[dict[str, Any]]:
        if isinstance(block.output, str):
            return [{"role": "tool", "tool_call_id": block.id, "content": block.output}]
        texts = [b.text for b in block.output if isinstance(b, TextBlock)]
        media = [
            self._media_part(b, allow_media=True) for b in block.output if isinstance(b, DataBlock)
        ]
        images = [p for p in media if p["type"] != "text"]
        notes = [p["text"] for p in media if p["type"] == "text"]
        if images:
            notes.append(f"[{len(images)} attachment(s) follow in the next message]")
        out: list[dict[str, Any]] = [
            {"role": "tool", "tool_call_id": block.id, "content": "\n".join(texts + notes)}
        ]
        if images:
            intro = {"type": "text", "text": f"Attachments returned by tool {block.name!r}:"}
            out.append({"role": "user", "content": [intro, *images]})
        return out

    def _hint(self, block: HintBlock) -> dict[str, Any]:
        attribute = f' source="{html.escape(block.source)}"' if block.source else ""
        parts: list[dict[str, Any]] = [{"type": "text", "text": f"<hint{attribute}>\n"}]
        if isinstance(block.hint, str):
            parts.append({"type": "text", "text": block.hint})
        else:
            for item in block.hint:
                if isinstance(item, TextBlock):
                    parts.append({"type": "text", "text": item.text})
                else:
                    parts.append(self._media_part(item, allow_media=True))
        parts.append({"type": "text", "text": "\n</hint>"})
        return {"role": "user", "content": _content(parts, separator="")}

    def _media_part(self, block: DataBlock, *, allow_media: bool) -> dict[str, Any]:
        source = block.source
        media_type = source.media_type
        if allow_media and media_type.startswith("image/"):
            url = (
                f"data:{media_type};base64,{source.data}"
                if isinstance(source, Base64Source)
                else source.url
            )
            return {"type": "image_url", "image_url": {"url": url}}
        if allow_media and isinstance(source, Base64Source) and media_type in _AUDIO_FORMATS:
            return {
                "type": "input_audio",
                "input_audio": {"data": source.data, "format": _AUDIO_FORMATS[media_type]},
            }
        label = f"{block.name} ({media_type})" if block.name else media_type
        return {"type": "text", "text": f"[attachment not shown to the model: {label}]"}

    def _plain_text(self, msg: Msg) -> str:
        pieces: list[str] = []
        for block in msg.content:
            if isinstance(block, TextBlock):
                pieces.append(block.text)
            elif isinstance(block, HintBlock):
                hint = self._hint(block)["content"]
                if isinstance(hint, str):
                    pieces.append(hint)
        return "\n".join(pieces)


def _tool_call(block: ToolUseBlock) -> dict[str, Any]:
    return {
        "id": block.id,
        "type": "function",
        "function": {"name": block.name, "arguments": json.dumps(block.input, ensure_ascii=False)},
    }


def _content(parts: list[dict[str, Any]], separator: str = "\n") -> str | list[dict[str, Any]]:
    if all(p["type"] == "text" for p in parts):
        return separator.join(p["text"] for p in parts)
    return list(parts)
