import zipfile
from pathlib import Path

import pytest

from archivist.rag import (
    HTMLParser,
    ImageParser,
    MarkdownParser,
    PDFParser,
    PPTParser,
    RSTParser,
    TextParser,
    UnsupportedFileTypeError,
    default_registry,
)
from factories import make_image, make_pdf, make_pptx


@pytest.mark.parametrize(
    ("name", "parser"),
    [
        ("a.md", MarkdownParser),
        ("a.rst", RSTParser),
        ("a.html", HTMLParser),
        ("a.TXT", TextParser),
        ("a.yaml", TextParser),
        ("a.pdf", PDFParser),
        ("a.pptx", PPTParser),
        ("a.jpeg", ImageParser),
        ("a.webp", ImageParser),
    ],
)
def test_extension_picks_the_parser(name: str, parser: type) -> None:
    assert isinstance(default_registry().parser_for(name), parser)


def test_magic_bytes_decide_when_the_name_says_nothing(tmp_path: Path) -> None:
    registry = default_registry()
    cases = {
        "report": (make_pdf(["x"]), PDFParser),
        "photo": (make_image("JPEG"), ImageParser),
        "deck": (make_pptx([{"texts": ["x"]}]), PPTParser),
        "notes": ("plain words, 中文".encode(), TextParser),
        "page": (b"\n<!DOCTYPE html>\n<html><body><p>hi</p></body></html>", HTMLParser),
    }
    for name, (data, parser) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert isinstance(registry.parser_for_path(path), parser), name


def test_unsupported_type_names_the_file(tmp_path: Path) -> None:
    registry = default_registry()
    with pytest.raises(UnsupportedFileTypeError, match=r"movie\.mkv.*not supported"):
        registry.parser_for("movie.mkv")
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(UnsupportedFileTypeError, match="blob.bin"):
        registry.parser_for_path(binary)
    assert issubclass(UnsupportedFileTypeError, ValueError)


def test_missing_path_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="absent.pdf"):
        default_registry().parser_for_path(tmp_path / "absent.pdf")


def test_registering_a_custom_parser_routes_its_types() -> None:
    class RstParser(TextParser):
        supported_media_types = ["text/x-rst"]

    registry = default_registry()
    registry.register(RstParser, RstParser)
    assert isinstance(registry.parser_for("guide.rst"), RstParser)
    assert type(registry.parser_for("guide.md")) is MarkdownParser


def test_office_zips_are_told_apart_by_their_folders(tmp_path: Path) -> None:
    from archivist.rag import ExcelParser, WordParser
    from factories import make_docx, make_xlsx

    registry = default_registry()
    cases = {
        "doc": (make_docx([("p", "x")]), WordParser),
        "book": (make_xlsx({"S": [["x"]]}), ExcelParser),
        "deck": (make_pptx([{"texts": ["x"]}]), PPTParser),
    }
    for name, (data, parser) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert isinstance(registry.parser_for_path(path), parser), name
        assert isinstance(registry.parser_for(name, head=data[:4096]), parser), name
    plain_zip = tmp_path / "archive"
    with zipfile.ZipFile(plain_zip, "w") as archive:
        archive.writestr("readme.txt", "not office")
    with pytest.raises(UnsupportedFileTypeError, match="archive"):
        registry.parser_for_path(plain_zip)


@pytest.mark.parametrize(
    ("name", "parser_name"),
    [
        ("a.docx", "WordParser"),
        ("a.xlsx", "ExcelParser"),
        ("a.xlsm", "ExcelParser"),
        ("a.markdown", "MarkdownParser"),
        ("a.htm", "HTMLParser"),
    ],
)
def test_new_extensions(name: str, parser_name: str) -> None:
    assert type(default_registry().parser_for(name)).__name__ == parser_name
