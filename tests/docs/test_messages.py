from datetime import datetime

import pytest
from pydantic import TypeAdapter, ValidationError

from archivist.message import (
    Base64Source,
    ContentBlock,
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
)


def test_every_block_has_type_id_and_created_at() -> None:
    blocks = [
        TextBlock(text="hi"),
        DataBlock(source=URLSource(url="https://x/y.png", media_type="image/png")),
        HintBlock(hint="context"),
        ToolUseBlock(name="search", input={"q": "x"}),
        ToolResultBlock(name="search", output="ok"),
    ]
    types = [b.type for b in blocks]
    assert types == ["text", "data", "hint", "tool_use", "tool_result"]
    assert len({b.id for b in blocks}) == 5
    assert all(isinstance(b.created_at, datetime) and b.created_at.tzinfo for b in blocks)


def test_msg_json_round_trips_exactly_with_every_block_kind() -> None:
    msg = Msg(
        "user",
        [
            TextBlock(text="what is this? 猫"),
            DataBlock(source=Base64Source(data="aGVsbG8=", media_type="image/png"), name="a.png"),
            HintBlock(hint=[TextBlock(text="retrieved")], source="rag"),
            ToolUseBlock(id="call_1", name="f", input={"a": [1, 2.5, None]}),
            ToolResultBlock(id="call_1", name="f", output=[TextBlock(text="r")], is_error=True),
        ],
        "assistant",
    )
    text = msg.model_dump_json()
    again = Msg.model_validate_json(text)
    assert again == msg
    assert again.model_dump_json() == text
    assert isinstance(again.content[1], DataBlock)
    assert isinstance(again.content[1].source, Base64Source)


def test_string_content_becomes_one_text_block() -> None:
    msg = Msg("bob", "hello", "user")
    assert [type(b) for b in msg.content] == [TextBlock]
    assert msg.get_text_content() == "hello"


def test_media_type_is_required_on_sources() -> None:
    with pytest.raises(ValidationError):
        Base64Source(data="x")  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        URLSource(url="https://x", media_type="")


def test_content_block_union_dispatches_on_type() -> None:
    adapter = TypeAdapter(ContentBlock)
    block = adapter.validate_python({"type": "tool_use", "name": "f", "input": {}})
    assert isinstance(block, ToolUseBlock)
    with pytest.raises(ValidationError):
        adapter.validate_python({"type": "nope"})


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(ValidationError):
        TextBlock(text="x", score=1.0)  # type: ignore[call-arg]
