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


async def test_undecodable_bytes_name_the_file() -> None:
    with pytest.raises(ValueError, match=r"latin\.txt.*utf-8"):
        await TextParser().parse(file="café".encode("latin-1"), filename="latin.txt")


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
