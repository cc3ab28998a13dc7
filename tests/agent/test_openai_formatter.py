"""How Msgs become OpenAI messages: hints, media, tool results."""

from __future__ import annotations

from archivist.message import (
    Base64Source,
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ToolResultBlock,
    URLSource,
)
from archivist.model import OpenAIChatFormatter

PNG = DataBlock(source=Base64Source(data="AAAA", media_type="image/png"), name="p.png")


def test_hint_is_a_user_message_wrapped_in_hint_tags() -> None:
    messages = OpenAIChatFormatter().format_messages(
        [
            Msg("user", "Who wrote it?", "user"),
            Msg("rag", [HintBlock(hint="[1] report.pdf p.3: Written by Ada.")], "user"),
        ]
    )
    assert messages == [
        {"role": "user", "content": "Who wrote it?"},
        {"role": "user", "content": "<hint>\n[1] report.pdf p.3: Written by Ada.\n</hint>"},
    ]


def test_hint_with_blocks_keeps_images_inside_the_tags() -> None:
    (message,) = OpenAIChatFormatter().format_messages(
        [Msg("rag", [HintBlock(hint=[TextBlock(text="Figure 2:"), PNG], source='a"b')], "user")]
    )
    assert message == {
        "role": "user",
        "content": [
            {"type": "text", "text": '<hint source="a&quot;b">\n'},
            {"type": "text", "text": "Figure 2:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "text", "text": "\n</hint>"},
        ],
    }


def test_hint_inside_a_message_splits_it_in_place() -> None:
    messages = OpenAIChatFormatter().format_messages(
        [Msg("u", [TextBlock(text="before"), HintBlock(hint="h"), TextBlock(text="after")], "user")]
    )
    assert [m["content"] for m in messages] == ["before", "<hint>\nh\n</hint>", "after"]


def test_tool_result_images_follow_in_a_user_message() -> None:
    messages = OpenAIChatFormatter().format_messages(
        [
            Msg(
                "tool",
                [ToolResultBlock(id="c1", name="render", output=[TextBlock(text="done"), PNG])],
                "user",
            )
        ]
    )
    assert messages[0] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "done\n[1 attachment(s) follow in the next message]",
    }
    assert messages[1]["role"] == "user"
    assert messages[1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AAAA"},
    }


def test_audio_becomes_input_audio_and_other_media_a_note() -> None:
    wav = DataBlock(source=Base64Source(data="UklG", media_type="audio/wav"))
    video = DataBlock(
        source=URLSource(url="https://x.test/v.mp4", media_type="video/mp4"), name="v.mp4"
    )
    (message,) = OpenAIChatFormatter().format_messages([Msg("u", [wav, video], "user")])
    assert message["content"] == [
        {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
        {"type": "text", "text": "[attachment not shown to the model: v.mp4 (video/mp4)]"},
    ]


def test_assistant_media_is_described_not_sent() -> None:
    (message,) = OpenAIChatFormatter().format_messages(
        [Msg("bot", [TextBlock(text="Here:"), PNG], "assistant")]
    )
    assert message == {
        "role": "assistant",
        "content": "Here:\n[attachment not shown to the model: p.png (image/png)]",
    }


def test_bare_function_schemas_are_wrapped() -> None:
    bare = {"name": "f", "description": "", "parameters": {"type": "object", "properties": {}}}
    assert OpenAIChatFormatter().format_tools([bare]) == [{"type": "function", "function": bare}]
