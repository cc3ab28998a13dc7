"""The service decides an upload's type as `archivist index` does (the extension a parser
claims, else the content), through the one `ParserRegistry.media_type_of`, and still refuses
what is not of the type it is read as."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from archivist.rag import default_registry
from archivist.service.errors import UploadTypeError
from archivist.service.indexing.upload_types import check_upload_type
from factories import make_pdf

GZIP_TEXT = gzip.compress(b"notes about the harbour\n", mtime=0)
ELF_HEADER = b"\x7fELF\x02\x01\x01\x00" + bytes(56)

TEXT_OF_ANY_NAME = [
    ("METADATA", b"Metadata-Version: 2.1\nName: harbour-tools\nSummary: Tide tables\n"),
    ("passwd.1", b'.TH PASSWD 1\n.SH NAME\npasswd \\- change user password\n'),
    ("README", "熊猫主要吃竹子，每天要吃十几个小时。\n".encode()),
    ("notes.log", b"12:00 the harbour opened\n12:05 the first ship came in\n"),
    ("tool.exe", b"plain words in a file with an executable's name\n"),
]


@pytest.mark.parametrize(("name", "content"), TEXT_OF_ANY_NAME)
def test_text_of_any_name_is_accepted_as_the_cli_reads_it(
    tmp_path: Path, name: str, content: bytes
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    registry = default_registry()
    accepted = check_upload_type(name, path, registry, False, "m")
    assert accepted == registry.media_type_of(path) == "text/plain"
    # the CLI's parser for the file is the one for the type the service accepted it as
    assert type(registry.parser_for_path(path)) is type(registry.parser_for(name, None, accepted))


def test_a_document_without_an_extension_is_read_by_its_content(tmp_path: Path) -> None:
    path = tmp_path / "handbook"
    path.write_bytes(make_pdf(["Holidays: twenty-eight days."]))
    registry = default_registry()
    assert check_upload_type("handbook", path, registry, False, "m") == "application/pdf"
    assert registry.media_type_of(path) == "application/pdf"


@pytest.mark.parametrize(
    ("name", "content", "what"),
    [
        ("program", ELF_HEADER, "an ELF executable"),
        ("setup.exe", b"MZ\x90\x00\x03\x00\x00\x00" + bytes(56), "a Windows executable"),
        ("notes.txt.gz", GZIP_TEXT, "gzip data"),
        ("bundle.tar.7z", b"7z\xbc\xaf\x27\x1c\x00\x04" + bytes(24), "a 7-Zip archive"),
        ("blob", bytes(range(256)) * 4, "not text"),
    ],
)
def test_binary_content_under_a_name_no_parser_claims_is_refused_saying_what_it_is(
    tmp_path: Path, name: str, content: bytes, what: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(UploadTypeError) as raised:
        check_upload_type(name, path, default_registry(), False, "m")
    message = str(raised.value)
    assert message.startswith(f"{name}: unsupported file type"), message
    assert f"the content is {what}" in message and ".txt" in message


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("report.pdf", b"plain words, no PDF header\n"),
        ("notes.txt", ELF_HEADER),
        ("notes.md", GZIP_TEXT),
    ],
)
def test_content_not_of_the_type_its_extension_names_is_refused(
    tmp_path: Path, name: str, content: bytes
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(UploadTypeError, match=rf"^{name}: the content does not match"):
        check_upload_type(name, path, default_registry(), False, "m")


def test_an_image_of_any_name_is_refused_when_nothing_reads_images(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(8) + b"IHDR" + bytes(64)
    for name in ("scan.png", "scan"):
        path = tmp_path / name
        path.write_bytes(png)
        with pytest.raises(UploadTypeError, match="images cannot be indexed"):
            check_upload_type(name, path, default_registry(), False, "m")


def test_the_type_an_upload_was_accepted_as_picks_its_parser_later(tmp_path: Path) -> None:
    """The indexer reads a stored upload as the type recorded for it, not as another
    machine's guess from its name."""
    path = tmp_path / "notes.pdf"
    path.write_bytes(b"Plain words that were accepted as text.\n")
    registry = default_registry()
    assert registry.media_type_of(path) == "application/pdf"
    as_text = registry.reading_as("text/plain")
    assert as_text.media_type_of(path) == "text/plain"
    assert type(as_text.parser_for_path(path)) is type(registry.parser_for("x.txt"))
    assert as_text.identity == registry.identity  # what was indexed stays current
