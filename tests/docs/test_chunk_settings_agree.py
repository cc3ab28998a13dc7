"""Every surface takes its chunk size and overlap defaults from `ChunkSettings` and refuses an
overlap that does not fit inside the chunk size with `ChunkSettings`' one message."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import ValidationError

from archivist.cli.main import build_parser, main
from archivist.errors import InvalidArgumentError
from archivist.eval import EvalConfig
from archivist.rag.chunker import (
    ApproxTokenChunker,
    ChunkSettings,
    EstimatedTokenizer,
    TokenChunker,
    chunker_for,
)
from archivist.service import ServiceSettings
from archivist.service.problems import install_problem_handlers
from archivist.service.schemas import KnowledgeBaseCreate

DEFAULTS = ChunkSettings()
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "archivist-overview.md"


def one_message(chunk_size: int, overlap: int) -> str:
    """What `ChunkSettings` says of this pair (its validator's error, inside pydantic's)."""
    with pytest.raises(ValidationError) as refused:
        ChunkSettings(chunk_size=chunk_size, overlap=overlap)
    [error] = refused.value.errors()
    assert isinstance(error["ctx"]["error"], InvalidArgumentError)
    return str(error["ctx"]["error"])


def test_the_rule_has_one_message_naming_both_values() -> None:
    assert one_message(16, 20) == "overlap (20) must be smaller than chunk_size (16)"
    with pytest.raises(InvalidArgumentError) as refused:
        ChunkSettings.of(chunk_size=16, overlap=16)
    assert str(refused.value) == one_message(16, 16) and refused.value.argument == "overlap"
    assert ChunkSettings.of(chunk_size=None, overlap=None) == DEFAULTS


# -------------------------------------------------------------------------------- defaults


def _chunking_parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                if any("--overlap" in a.option_strings for a in sub._actions):
                    yield sub
                yield from _chunking_parsers(sub)


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    return next(a for a in parser._actions if flag in a.option_strings)


def test_cli_defaults_and_help_are_chunk_settings() -> None:
    parsers = {p.prog.split()[-1]: p for p in _chunking_parsers(build_parser())}
    assert {"index", "chunk", "eval", "serve", "worker"} <= parsers.keys()
    assert DEFAULTS.chunk_size is None  # shown in help as the model's input length
    for name, parser in parsers.items():
        size, overlap = _option(parser, "--chunk-size"), _option(parser, "--overlap")
        assert f"{DEFAULTS.overlap})" in (overlap.help or ""), name
        assert "the model's input length" in (size.help or ""), name
        if name in {"index", "chunk"}:  # unset: the knowledge base's own settings
            assert (size.default, overlap.default) == (None, None)
            assert f"for a new KB {DEFAULTS.overlap}" in (overlap.help or "")
        else:
            assert (size.default, overlap.default) == (DEFAULTS.chunk_size, DEFAULTS.overlap)


def test_service_eval_and_chunker_defaults_are_chunk_settings(tmp_path: Path) -> None:
    service = ServiceSettings(home=tmp_path)
    assert (service.chunk_size, service.overlap) == (DEFAULTS.chunk_size, DEFAULTS.overlap)
    config = EvalConfig(dataset_dir=tmp_path)
    assert (config.chunk_size, config.overlap) == (DEFAULTS.chunk_size, DEFAULTS.overlap)
    for function in (chunker_for, TokenChunker):
        parameters = inspect.signature(function).parameters
        assert parameters["chunk_size"].default == DEFAULTS.chunk_size
        assert parameters["overlap"].default == DEFAULTS.overlap
    tokenizer = EstimatedTokenizer(200)
    made = chunker_for(tokenizer)
    assert (made.chunk_size, made.overlap) == (tokenizer.max_tokens, DEFAULTS.overlap)


def test_approx_token_chunker_keeps_agentscope_defaults_under_the_same_rule() -> None:
    """Its defaults are AgentScope's (512 / 50) so ported code cuts the same windows; its
    parameters are `ChunkSettings`, so the rule and message are the same."""
    assert issubclass(ApproxTokenChunker.Parameters, ChunkSettings)
    parameters = ApproxTokenChunker().parameters
    assert (parameters.chunk_size, parameters.overlap) == (512, 50)


# -------------------------------------------------------------------------------- refusals


def test_the_library_refuses_with_the_one_message() -> None:
    message = one_message(16, 16)
    for make in (
        lambda: TokenChunker(EstimatedTokenizer(64), chunk_size=16, overlap=16),
        lambda: ApproxTokenChunker(chunk_size=16, overlap=16),
        lambda: ApproxTokenChunker(ApproxTokenChunker.Parameters.of(chunk_size=16, overlap=16)),
    ):
        with pytest.raises(InvalidArgumentError) as refused:
            make()
        assert str(refused.value) == message and refused.value.argument == "overlap"
    # The default chunk size is the model's input: the same rule, once it is known.
    with pytest.raises(InvalidArgumentError, match=r"^overlap \(64\) .* chunk_size \(64\)$"):
        chunker_for(EstimatedTokenizer(64), overlap=64)
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ApproxTokenChunker.Parameters(chunk_size=16, overlap=16)  # AgentScope's form


@pytest.mark.parametrize("model", [ServiceSettings, EvalConfig])
def test_settings_models_refuse_with_the_one_message(tmp_path: Path, model: type) -> None:
    required = {"home": tmp_path} if model is ServiceSettings else {"dataset_dir": tmp_path}
    with pytest.raises(ValidationError) as refused:
        model(**required, chunk_size=16, overlap=DEFAULTS.overlap)  # the default does not fit
    [error] = refused.value.errors()
    assert str(error["ctx"]["error"]) == one_message(16, DEFAULTS.overlap)


def test_the_service_answers_422_with_the_one_message() -> None:
    app = FastAPI()
    install_problem_handlers(app)

    @app.post("/v1/knowledge-bases")
    async def create(body: KnowledgeBaseCreate) -> dict[str, str]:
        return {"name": body.name}

    http = TestClient(app)
    bad = http.post("/v1/knowledge-bases", json={"name": "o", "chunk_size": 32, "overlap": 32})
    assert bad.status_code == 422 and one_message(32, 32) in bad.json()["detail"]
    # One of the two left to the service's default: the route checks the pair it makes.
    assert http.post("/v1/knowledge-bases", json={"name": "o", "overlap": 300}).status_code == 200


@pytest.mark.parametrize(
    "argv",
    [
        ["index", str(SAMPLE), "--chunk-size", "16", "--overlap", "16"],
        ["chunk", str(SAMPLE), "--chunk-size", "16", "--overlap", "16"],
        ["eval", "no-such-dataset", "--chunk-size", "16", "--overlap", "16"],
    ],
    ids=["index", "chunk", "eval"],
)
def test_the_cli_refuses_in_one_line_naming_the_option(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"archivist: error: --overlap: {one_message(16, 16)}\n"


def test_serve_refuses_with_the_one_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import archivist.service

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the settings were accepted")

    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path))
    monkeypatch.setattr(archivist.service, "create_app", never)
    assert main(["serve", "--chunk-size", "16"]) == 2  # the default overlap does not fit
    err = capsys.readouterr().err
    assert err == f"archivist: error: --overlap: {one_message(16, DEFAULTS.overlap)}\n"
