"""The error tree: one root, stdlib bases kept for old `except` clauses, fields set where the
error is raised, and the old import paths still naming the same classes."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from archivist import errors
from archivist.errors import (
    ArchivistError,
    ChatModelAPIError,
    ChatModelError,
    ConfigurationError,
    DocumentNotFoundError,
    DocumentParseError,
    EmbeddingAPIError,
    EmbeddingError,
    FileError,
    InvalidArgumentError,
    InvalidVectorError,
    StoreError,
    StoreLockedError,
    TransientEmbeddingError,
    UnsupportedFileTypeError,
)


@pytest.mark.parametrize(
    ("error", "bases"),
    [
        (InvalidArgumentError, (ValueError,)),
        (ConfigurationError, (ValueError,)),
        (DocumentNotFoundError, (LookupError,)),
        (UnsupportedFileTypeError, (FileError, ValueError)),
        (DocumentParseError, (FileError, ValueError)),
        (StoreLockedError, (StoreError, RuntimeError)),
        (InvalidVectorError, (EmbeddingError,)),
        (TransientEmbeddingError, (EmbeddingAPIError, EmbeddingError)),
        (ChatModelAPIError, (ChatModelError,)),
    ],
)
def test_every_class_has_the_root_and_keeps_its_stdlib_base(
    error: type[Exception], bases: tuple[type[Exception], ...]
) -> None:
    assert issubclass(error, ArchivistError)
    for base in bases:
        assert issubclass(error, base)


def test_a_models_bad_output_is_not_the_callers_bad_argument() -> None:
    for error in (InvalidVectorError, EmbeddingError, ChatModelError, StoreError):
        assert not issubclass(error, ValueError | LookupError)


def test_every_public_class_descends_from_the_root() -> None:
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), ArchivistError), name


def test_the_old_import_paths_name_the_same_classes() -> None:
    from archivist.embedding import EmbeddingError as FromEmbedding
    from archivist.embedding.errors import TransientEmbeddingError as FromEmbeddingErrors
    from archivist.model import ChatModelError as FromModel
    from archivist.model.errors import ChatModelAPIError as FromModelErrors
    from archivist.rag import DocumentNotFoundError as FromRag
    from archivist.rag import UnsupportedFileTypeError as FromRagParser
    from archivist.rag.knowledge.knowledge_base import DocumentNotFoundError as FromKB
    from archivist.rag.parser.registry import UnsupportedFileTypeError as FromRegistry
    from archivist.rag.store.file_lock import StoreLockedError as FromLock
    from archivist.rag.store.qdrant import StoreLockedError as FromQdrant

    assert FromEmbedding is EmbeddingError and FromEmbeddingErrors is TransientEmbeddingError
    assert FromModel is ChatModelError and FromModelErrors is ChatModelAPIError
    assert FromRag is FromKB is DocumentNotFoundError
    assert FromRagParser is FromRegistry is UnsupportedFileTypeError
    assert FromLock is FromQdrant is StoreLockedError


def test_a_file_error_keeps_where_apart_from_why() -> None:
    error = DocumentParseError("corrupt PDF", path=Path("/srv/files/7f/report.pdf"))
    assert (error.path, error.filename, error.reason) == (
        "/srv/files/7f/report.pdf",
        "report.pdf",
        "corrupt PDF",
    )
    assert str(error) == "/srv/files/7f/report.pdf: corrupt PDF"
    assert str(DocumentParseError("empty", filename="x.txt")) == "x.txt: empty"


def test_the_registry_names_the_type_and_what_is_supported(tmp_path: Path) -> None:
    from archivist.rag import default_registry

    movie = tmp_path / "movie.mkv"
    movie.write_bytes(b"\x1a\x45\xdf\xa3" + bytes(200))
    with pytest.raises(UnsupportedFileTypeError) as raised:
        default_registry().parser_for_path(movie)
    assert raised.value.path == str(movie) and raised.value.filename == "movie.mkv"
    assert ".pdf" in raised.value.supported and ".md" in raised.value.supported
    assert raised.value.reason == "an unknown file type is not supported"
    assert str(raised.value).startswith(f"{movie}: an unknown file type is not supported")
    assert "(supported extensions: " in str(raised.value)


def test_the_store_lock_names_its_holder(tmp_path: Path) -> None:
    from archivist.rag.store.file_lock import StoreLock

    held = StoreLock(tmp_path)
    held.acquire()
    try:
        with pytest.raises(StoreLockedError) as raised:
            StoreLock(tmp_path).acquire()
    finally:
        held.release()
    assert raised.value.path == str(tmp_path)
    assert raised.value.holder.startswith("PID ")


def test_validation_names_the_argument() -> None:
    from archivist.validation import check_document_id, check_positive_int

    with pytest.raises(InvalidArgumentError) as raised:
        check_positive_int(0, "top_k")
    assert raised.value.argument == "top_k"
    with pytest.raises(ValueError, match="document_id") as caught:  # old clauses still catch
        check_document_id("  ")
    assert isinstance(caught.value, InvalidArgumentError)
    assert caught.value.argument == "document_id"


@pytest.mark.parametrize(
    "error",
    [
        StoreLockedError("/tmp/store", "PID 7"),
        UnsupportedFileTypeError("nope", path="/a/b.mkv", supported=[".md"]),
        EmbeddingAPIError(400, "bad input", code="invalid", model="m"),
        TransientEmbeddingError("slow down", status=429, retry_after=2.0),
        InvalidVectorError("bad", model="m", problem="holds nan", document_id="d", chunk_index=3),
        DocumentNotFoundError("gone", document_id="d", knowledge_base="kb"),
        ChatModelAPIError(500, "oops", code="server_error"),
    ],
)
def test_errors_pickle_with_their_fields(error: ArchivistError) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error)
    assert copy.__dict__ == error.__dict__


def test_no_module_reads_fields_back_out_of_an_error_message() -> None:
    """A supplement to the tests above: the three message parsers that once stood for fields
    (lock holder, unsupported type, server folders) are gone, and no new one appears."""
    import re

    import archivist

    parsing = re.compile(
        r"str\((exc|error|err|e)\)\s*\.\s*(split|rsplit|removeprefix|removesuffix|replace|"
        r"partition|rpartition|startswith|endswith)|locked by \"|\(supported extensions\""
    )
    root = Path(archivist.__file__).parent
    found = [
        f"{path.relative_to(root)}:{number}"
        for path in root.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if parsing.search(line)
    ]
    assert found == []
