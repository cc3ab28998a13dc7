"""The service's own refusals belong to the one error tree, with their stdlib bases and
the fields a caller needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from archivist.errors import (
    ArchivistError,
    ConfigurationError,
    InvalidArgumentError,
    UnsupportedFileTypeError,
)
from archivist.rag.parser.registry import default_registry
from archivist.service.errors import (
    FileStoreError,
    KBExistsError,
    QuotaExceeded,
    UploadRejected,
    UploadTypeError,
)
from archivist.service.indexing.upload_types import check_upload_type
from archivist.service.storage.file_store import open_file_store


@pytest.mark.parametrize(
    ("error", "bases"),
    [
        (QuotaExceeded, (ArchivistError,)),
        (UploadRejected, (ArchivistError, ValueError)),
        (KBExistsError, (InvalidArgumentError, ValueError)),
        (FileStoreError, (ConfigurationError, ValueError)),
        (UploadTypeError, (UnsupportedFileTypeError, ValueError)),
    ],
)
def test_each_service_error_is_in_the_tree(error: type, bases: tuple[type, ...]) -> None:
    assert all(issubclass(error, base) for base in bases)


def test_an_upload_of_the_wrong_type_names_the_file_and_what_is_read(tmp_path: Path) -> None:
    path = tmp_path / "upload"
    path.write_bytes(b"MZ\x90\x00binary")
    with pytest.raises(UploadTypeError) as raised:
        check_upload_type("tool.exe", path, default_registry(), False, "m")
    assert raised.value.filename == "tool.exe" and ".txt" in raised.value.supported
    assert str(raised.value).startswith("tool.exe: unsupported file type .exe")
    path.write_bytes(b"%PDF-1.4 not text")
    with pytest.raises(UploadTypeError, match=r"^notes\.txt: the content does not match"):
        check_upload_type("notes.txt", path, default_registry(), False, "m")


@pytest.mark.parametrize(
    "text",
    [
        b"MZ and DZ co-twins had 70% and 9% cumulative probability of the disease.\n",
        b"Rar! said the parrot, and the sailors laughed.\n",
        b"Old notes.\nA PDF starts with %PDF-1.7 and ends with %%EOF.\n",
    ],
)
def test_text_that_starts_or_speaks_like_a_binary_signature_is_text(
    tmp_path: Path, text: bytes
) -> None:
    path = tmp_path / "upload"
    path.write_bytes(text)
    assert check_upload_type("notes.txt", path, default_registry(), False, "m") == "text/plain"


@pytest.mark.parametrize(
    ("content", "name"),
    [
        (b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff" + bytes(50), "tool.txt"),
        (b"Rar!\x1a\x07\x01\x00archive", "notes.md"),
    ],
)
def test_real_binary_headers_under_a_text_name_are_refused(
    tmp_path: Path, content: bytes, name: str
) -> None:
    path = tmp_path / "upload"
    path.write_bytes(content)
    with pytest.raises(UploadTypeError, match="the content does not match"):
        check_upload_type(name, path, default_registry(), False, "m")


def test_a_pdf_with_leading_junk_is_still_a_pdf(tmp_path: Path) -> None:
    path = tmp_path / "upload"
    path.write_bytes(b"\r\n% a mail gateway's banner\r\n%PDF-1.4\n...")
    assert check_upload_type("report.pdf", path, default_registry(), False, "m") == (
        "application/pdf"
    )
    path.write_bytes(b"plain words, no header at all")
    with pytest.raises(UploadTypeError, match="does not match"):
        check_upload_type("report.pdf", path, default_registry(), False, "m")


def test_a_bad_files_url_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(FileStoreError) as raised:
        open_file_store("ftp://example/x", tmp_path)
    assert raised.value.setting == "files_url"
