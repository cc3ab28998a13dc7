import base64
from pathlib import Path

import pytest

from archivist.message import DataBlock
from archivist.rag import ImageParser
from archivist.rag.parser.image import sniff_image_type
from factories import make_image


@pytest.mark.parametrize(
    ("fmt", "media_type"),
    [
        ("PNG", "image/png"),
        ("JPEG", "image/jpeg"),
        ("GIF", "image/gif"),
        ("BMP", "image/bmp"),
        ("WEBP", "image/webp"),
    ],
)
async def test_each_format_is_sniffed_from_bytes(fmt: str, media_type: str) -> None:
    data = make_image(fmt)
    # the extension lies on purpose: the bytes decide
    sections = await ImageParser().parse(data, "picture.dat")
    assert len(sections) == 1
    block = sections[0].content
    assert isinstance(block, DataBlock)
    assert block.source.media_type == media_type  # type: ignore[union-attr]
    assert base64.b64decode(block.source.data) == data  # type: ignore[union-attr]
    assert sections[0].metadata == {"media_type": media_type}
    assert sections[0].source == "picture.dat"


@pytest.mark.parametrize(
    "text", [b"BMI-1 is overexpressed in a variety of cancers", b"BMW and BMX riders\n" * 3]
)
def test_text_that_starts_like_a_bmp_is_not_an_image(text: bytes) -> None:
    assert sniff_image_type(text) is None
    assert sniff_image_type(make_image("BMP")) == "image/bmp"


async def test_path_is_read_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "cat.png"
    path.write_bytes(make_image("PNG"))
    sections = await ImageParser().parse(file=str(path), filename="cat.png")
    assert sections[0].metadata == {"media_type": "image/png"}


async def test_unknown_bytes_are_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"cat\.png.*not a supported image"):
        await ImageParser().parse(b"%PDF-1.4 definitely not an image", "cat.png")


async def test_truncated_image_is_a_value_error() -> None:
    data = make_image("PNG", size=(64, 64))
    with pytest.raises(ValueError, match="half.png"):
        await ImageParser().parse(data[:30], "half.png")


async def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="gone.png"):
        await ImageParser().parse(str(tmp_path / "gone.png"), "gone.png")
    with pytest.raises(ValueError, match="empty.png"):
        await ImageParser().parse(b"", "empty.png")


def test_media_types_match_the_seed() -> None:
    assert ImageParser.supported_media_types == [
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/bmp",
        "image/webp",
    ]
