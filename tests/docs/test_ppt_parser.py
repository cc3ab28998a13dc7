import base64
import json
import zipfile
from io import BytesIO
from pathlib import Path

import pytest

from archivist.message import DataBlock, TextBlock
from archivist.rag import PPTParser
from factories import make_image, make_pptx

PNG = make_image("PNG", color="blue")
DECK = [
    {
        "title": "Sleep facts",
        "texts": ["Cats sleep a lot."],
        "table": [["Animal", "Hours | per day"], ["Cat", "12-16\nmostly naps"], ["Dog", "12"]],
        "group": ["grouped one", "grouped two"],
        "pictures": [PNG],
    },
    {},  # an empty slide: must not yield a Section holding only tags
    {"texts": ["Second real slide"]},
]


def _text(section: object) -> str:
    content = section.content  # type: ignore[attr-defined]
    assert isinstance(content, TextBlock)
    return content.text


async def test_default_merges_text_and_tables_and_splits_pictures(tmp_path: Path) -> None:
    path = tmp_path / "deck.pptx"
    path.write_bytes(make_pptx(DECK))
    sections = await PPTParser(
        include_image=True,
        separate_table=False,
        table_format="markdown",
        slide_prefix="<slide index={index}>",
        slide_suffix="</slide>",
    ).parse(file=str(path), filename="deck.pptx")
    assert [s.metadata for s in sections] == [
        {"slide": 1},
        {"slide": 1, "media_type": "image/png"},
        {"slide": 3},
    ]
    assert _text(sections[0]) == (
        "<slide index=1>\n"
        "Sleep facts\n\nCats sleep a lot.\n\n"
        "| Animal | Hours \\| per day |\n| --- | --- |\n"
        "| Cat | 12-16<br>mostly naps |\n| Dog | 12 |"
        "\n\ngrouped one\n\ngrouped two\n</slide>"
    )
    picture = sections[1].content
    assert isinstance(picture, DataBlock)
    assert picture.source.media_type == "image/png"  # type: ignore[union-attr]
    assert base64.b64decode(picture.source.data) == PNG  # type: ignore[union-attr]
    assert _text(sections[2]) == "<slide index=3>\nSecond real slide\n</slide>"


async def test_separate_json_tables_and_no_tags() -> None:
    sections = await PPTParser(
        separate_table=True, table_format="json", slide_prefix=None, slide_suffix=None
    ).parse(make_pptx(DECK), "deck.pptx")
    texts = [_text(s) for s in sections if isinstance(s.content, TextBlock)]
    assert texts[0] == "Sleep facts\n\nCats sleep a lot."
    assert json.loads(texts[1]) == [
        {"Animal": "Cat", "Hours | per day": "12-16\nmostly naps"},
        {"Animal": "Dog", "Hours | per day": "12"},
    ]
    assert texts[2] == "grouped one\n\ngrouped two"
    assert texts[3] == "Second real slide"
    assert all("<slide" not in t for t in texts)


async def test_separate_table_keeps_shape_order() -> None:
    """Regression (issue 12): text after a table follows the table; it is not merged with
    the text before it."""
    deck = make_pptx([{"texts": ["before"], "table": [["h"], ["v"]], "group": ["after"]}])
    sections = await PPTParser(separate_table=True).parse(deck, "order.pptx")
    assert [_text(s) for s in sections] == [
        "<slide index=1>\nbefore\n</slide>",
        "<slide index=1>\n| h |\n| --- |\n| v |\n</slide>",
        "<slide index=1>\nafter\n</slide>",
    ]


async def test_one_row_json_table_keeps_its_text() -> None:
    """Regression (issue 12): a one-row table is data in JSON mode, not an empty `[]`."""
    deck = make_pptx([{"table": [["Revenue", "42"]]}])
    sections = await PPTParser(separate_table=True, table_format="json").parse(deck, "one.pptx")
    body = _text(sections[0]).split("\n")[1]
    assert json.loads(body) == [{"column_1": "Revenue", "column_2": "42"}]


def _replace_media(deck: bytes, blob: bytes) -> bytes:
    with zipfile.ZipFile(BytesIO(deck)) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    for name in members:
        if name.startswith("ppt/media/"):
            members[name] = blob
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "blob",
    [
        PNG[: len(PNG) // 2],  # truncated
        PNG[:16] + (100_000).to_bytes(4, "big") * 2 + PNG[24:],  # 100000x100000: a bomb
        b"not an image at all",
    ],
    ids=["truncated", "bomb", "garbage"],
)
async def test_pictures_are_verified_like_image_files(blob: bytes) -> None:
    """Regression (issue 12): a deck's pictures are checked like image files; a broken one
    is left out and the slide's text still comes back."""
    deck = _replace_media(make_pptx([{"texts": ["kept"], "pictures": [PNG]}]), blob)
    sections = await PPTParser().parse(deck, "pics.pptx")
    assert [_text(s) for s in sections] == ["<slide index=1>\nkept\n</slide>"]


async def test_picture_media_type_comes_from_the_bytes() -> None:
    jpeg = make_image("JPEG")
    deck = _replace_media(make_pptx([{"pictures": [PNG]}]), jpeg)  # part still says PNG
    sections = await PPTParser().parse(deck, "lying.pptx")
    assert sections[0].metadata == {"slide": 1, "media_type": "image/jpeg"}
    assert base64.b64decode(sections[0].content.source.data) == jpeg  # type: ignore[union-attr]


async def test_include_image_false_drops_pictures() -> None:
    sections = await PPTParser(include_image=False).parse(make_pptx(DECK), "deck.pptx")
    assert all(isinstance(s.content, TextBlock) for s in sections)
    assert len(sections) == 2


async def test_json_table_with_blank_and_duplicate_headers() -> None:
    deck = make_pptx([{"table": [["", "x", "x"], ["1", "2", "3"]]}])
    sections = await PPTParser(separate_table=True, table_format="json").parse(deck, "t.pptx")
    body = _text(sections[0]).split("\n")[1]
    assert json.loads(body) == [{"column_1": "1", "x": "2", "x_2": "3"}]


def test_invalid_table_format_is_rejected() -> None:
    with pytest.raises(ValueError, match="table_format"):
        PPTParser(table_format="html")  # type: ignore[arg-type]


async def test_zip_that_is_not_a_pptx_names_the_file() -> None:
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("hello.txt", "not a deck")
    with pytest.raises(ValueError, match="fake.pptx"):
        await PPTParser().parse(buffer.getvalue(), "fake.pptx")


async def test_not_a_zip_truncated_and_empty_are_value_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"plain\.pptx.*not a zip"):
        await PPTParser().parse(b"hello world", "plain.pptx")
    data = make_pptx(DECK)
    with pytest.raises(ValueError, match="cut.pptx"):
        await PPTParser().parse(data[: len(data) // 2], "cut.pptx")
    with pytest.raises(ValueError, match="empty.pptx"):
        await PPTParser().parse(b"", "empty.pptx")
    with pytest.raises(FileNotFoundError, match="gone.pptx"):
        await PPTParser().parse(str(tmp_path / "gone.pptx"), "gone.pptx")


async def test_deck_with_nothing_in_it_is_an_error() -> None:
    with pytest.raises(ValueError, match="blank.pptx"):
        await PPTParser().parse(make_pptx([{}, {}]), "blank.pptx")


def test_media_types_and_extensions() -> None:
    assert PPTParser.supported_media_types == [
        "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    ]
    assert PPTParser.supported_extensions() == [".pptx"]
