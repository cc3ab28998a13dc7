from pathlib import Path

import pytest

from archivist.message import TextBlock
from archivist.rag import TextParser


async def test_bytes_become_one_section_with_the_whole_text() -> None:
    sections = await TextParser().parse(
        file=b"# Cats\nCats sleep 12-16 hours per day.\n", filename="cats.md"
    )
    assert len(sections) == 1
    assert isinstance(sections[0].content, TextBlock)
    assert sections[0].content.text == "# Cats\nCats sleep 12-16 hours per day.\n"
    assert sections[0].source == "cats.md"
    assert sections[0].metadata == {}


async def test_str_naming_an_existing_file_is_read_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("猫 sleep\n", encoding="utf-8")
    sections = await TextParser().parse(file=str(path), filename="notes.txt")
    assert sections[0].content.text == "猫 sleep\n"  # type: ignore[union-attr]


async def test_other_str_is_the_text_itself() -> None:
    sections = await TextParser().parse(file="./does-not-exist.md", filename="x.md")
    assert sections[0].content.text == "./does-not-exist.md"  # type: ignore[union-attr]


async def test_encoding_is_used_for_bytes_and_files(tmp_path: Path) -> None:
    path = tmp_path / "latin.txt"
    path.write_bytes("café crème".encode("latin-1"))
    sections = await TextParser(encoding="latin-1").parse(file=str(path), filename="latin.txt")
    assert sections[0].content.text == "café crème"  # type: ignore[union-attr]


async def test_utf8_bom_is_dropped() -> None:
    sections = await TextParser().parse(file=b"\xef\xbb\xbfhello", filename="bom.txt")
    assert sections[0].content.text == "hello"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "codec"),
    [
        ("Grüße aus München: café, crème brûlée, naïve façade.\n", "latin-1"),
        ("“Smart quotes” – en dash — em dash, 5 €.\n", "cp1252"),
        ("检索增强生成：把文档切成块，再按语义检索。数据库、向量与索引。\n" * 3, "gb18030"),
        ("中文文本，用于检测错误的编码。简体中文段落。\n" * 3, "gbk"),
        ("Привет мир, это обычный русский текст.\n" * 3, "cp1251"),
        ("日本語のテキストです。文字化けを検出します。\n" * 3, "shift_jis"),
    ],
)
async def test_legacy_encodings_are_detected(text: str, codec: str, tmp_path: Path) -> None:
    path = tmp_path / "legacy.txt"
    path.write_bytes(text.encode(codec))
    sections = await TextParser().parse(file=str(path), filename="legacy.txt")
    assert sections[0].content.text == text  # type: ignore[union-attr]


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"])
async def test_byte_order_mark_decides_the_encoding(codec: str) -> None:
    text = "Unicode text: café 中文 🙂\nsecond line\n"
    data = text.encode(codec)
    if codec in ("utf-16-le", "utf-16-be"):  # these codecs write no BOM themselves
        data = "\ufeff".encode(codec) + data
    sections = await TextParser().parse(file=data, filename="bom.txt")
    assert sections[0].content.text == text  # type: ignore[union-attr]


async def test_detection_off_names_the_file_and_encoding() -> None:
    with pytest.raises(ValueError, match=r"latin\.txt.*utf-8"):
        await TextParser(detect_encoding=False).parse(
            file="café".encode("latin-1"), filename="latin.txt"
        )


async def test_damaged_utf8_is_an_error_not_mojibake() -> None:
    data = ("Café, naïve, 日本語 🙂 " * 5).encode() + b"\xff" + b" end"
    with pytest.raises(ValueError, match=r"broken\.md.*utf-8 at byte"):
        await TextParser().parse(file=data, filename="broken.md")


@pytest.mark.parametrize(
    "data",
    [
        bytes(range(1, 256)) * 8,  # every byte value but NUL
        b"\x01\x02\x03\x04ELF-ish header\x05\x06" * 50 + b"\x89\x90",
        "plain ascii text".encode("utf-16-le"),  # UTF-16 without a BOM: NUL bytes
    ],
)
async def test_binary_content_is_a_clear_error(data: bytes) -> None:
    with pytest.raises(ValueError, match=r"blob\.txt.*(binary|NUL)"):
        await TextParser().parse(file=data, filename="blob.txt")


async def test_empty_and_blank_files_are_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty.txt"):
        await TextParser().parse(file=str(empty), filename="empty.txt")
    with pytest.raises(ValueError, match="blank.md"):
        await TextParser().parse(file=b" \n\t\n", filename="blank.md")


async def test_nul_bytes_are_rejected_as_binary() -> None:
    with pytest.raises(ValueError, match=r"bin\.txt.*NUL"):
        await TextParser().parse(file=b"abc\x00def", filename="bin.txt")


def test_unknown_encoding_fails_at_construction() -> None:
    with pytest.raises(LookupError):
        TextParser(encoding="no-such-codec")


def test_supported_media_types_match_the_seed() -> None:
    assert TextParser.supported_media_types == [
        "text/plain",
        "text/markdown",
        "text/csv",
        "text/html",
        "text/x-rst",
        "application/json",
        "application/xml",
        "application/x-yaml",
    ]
    assert {".md", ".txt", ".csv", ".yaml", ".json", ".rst"} <= set(
        TextParser.supported_extensions()
    )
