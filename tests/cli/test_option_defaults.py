"""The command line and the settings it fills agree: every option of `serve`, `worker`, `index`
and `eval` that sets a `ServiceSettings` or `EvalConfig` field has the field's default (in the
option's unit) and its bounds, and a value out of bounds is refused naming the flag."""

from __future__ import annotations

import argparse
import math
from typing import Any

import annotated_types
import pytest
from pydantic import BaseModel

from archivist.cli.main import build_parser
from archivist.eval import EvalConfig
from archivist.mcp.server import MAX_TOP_K
from archivist.options import (
    EVAL_OPTIONS,
    MAX_PER_DOCUMENT,
    MIN_RELEVANCE,
    OCR,
    OCR_LANGUAGES,
    SERVICE_OPTIONS,
    TOP_K,
    Option,
)
from archivist.service import ServiceSettings
from archivist.service.schemas import SearchRequest

# Each command, the arguments it needs besides an option, the model its options fill and the
# options that fill it.
COMMANDS: dict[str, tuple[list[str], type[BaseModel], tuple[Option, ...]]] = {
    "serve": ([], ServiceSettings, SERVICE_OPTIONS),
    "worker": ([], ServiceSettings, SERVICE_OPTIONS),
    "index": (["file.md"], ServiceSettings, (OCR, OCR_LANGUAGES)),
    "eval": (["dataset"], EvalConfig, EVAL_OPTIONS),
}
FROM_THE_KB = {"index": {"chunk_size", "overlap"}}
"""Options whose unset value means the knowledge base's own setting (None), not a default."""
AS_THE_FIELD = {("eval", "--quantization"): {"none": None}}
"""Flag values the command turns into another field value."""
ENVIRONMENT = ("ARCHIVIST_DATABASE_URL", "ARCHIVIST_PGVECTOR_URL", "ARCHIVIST_FILES_URL")


@pytest.fixture(autouse=True)
def no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


def subparser(command: str) -> argparse.ArgumentParser:
    parser = build_parser()
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    sub = commands.choices[command]
    assert isinstance(sub, argparse.ArgumentParser)
    return sub


def mapped(command: str) -> list[tuple[argparse.Action, Option]]:
    """The parser's actions of `command` that set a field of its model, with their option."""
    _, model, options = COMMANDS[command]
    by_flag = {option.flag: option for option in options}
    found = []
    for action in subparser(command)._actions:
        option = next((by_flag[f] for f in action.option_strings if f in by_flag), None)
        if option is not None and option.field in model.model_fields:
            found.append((action, option))
    return found


def field_bounds(model: type[BaseModel], field: str) -> dict[str, float]:
    """The field's `ge`/`gt`/`le`/`lt` bounds."""
    bounds: dict[str, float] = {}
    for item in model.model_fields[field].metadata:
        for name in ("ge", "gt", "le", "lt"):
            if isinstance(item, getattr(annotated_types, name.title())):
                bounds[name] = getattr(item, name)
    return bounds


def parse(command: str, *argv: str) -> argparse.Namespace:
    needs, _, _ = COMMANDS[command]
    return build_parser().parse_args([command, *needs, *argv])


def refusal(command: str, flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> str:
    """What `command FLAG VALUE` says on stderr as it exits with status 2."""
    with pytest.raises(SystemExit) as exit:
        parse(command, flag, value)
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def text(value: float, kind: type[Any]) -> str:
    return str(int(value)) if kind is int else repr(float(value))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_has_its_field_s_default(command: str) -> None:
    _, model, _ = COMMANDS[command]
    pairs = mapped(command)
    assert pairs, f"{command} sets no field of {model.__name__}"
    for action, option in pairs:
        default = AS_THE_FIELD.get((command, option.flag), {}).get(action.default, action.default)
        field = model.model_fields[option.field]
        assert option.to_setting(default) == field.default, option.flag
    # An option declared outside the catalogue whose name is a field's has its default too.
    seen = {action.dest for action, _ in pairs}
    for action in subparser(command)._actions:
        if action.dest in FROM_THE_KB.get(command, ()):
            assert action.default is None
        elif action.dest in model.model_fields and action.dest not in seen:
            assert action.default == model.model_fields[action.dest].default, action.dest
    if command in ("serve", "worker"):  # every service option that is theirs is there
        flags = {option.flag for _, option in pairs}
        assert {"--workers", "--ocr", "--chunk-size", "--pgvector-url"} <= flags


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_has_its_field_s_bounds_and_names_itself_refusing(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, model, _ = COMMANDS[command]
    checked = 0
    for action, option in mapped(command):
        bounds = field_bounds(model, option.field)
        if option.kind not in (int, float):
            assert not bounds, option.flag
            continue
        shown = "/".join(action.option_strings)
        assert bounds == option.bounds(), option.flag
        step = 1 if option.kind is int else 1e-3
        for name, bound in bounds.items():
            edge = bound / option.scale
            inside = {"ge": edge, "le": edge, "gt": edge + step, "lt": edge - step}[name]
            outside = {"ge": edge - step, "le": edge + step, "gt": edge, "lt": edge}[name]
            if option.kind is int:
                inside, outside = math.ceil(inside), math.floor(outside)
            parsed = parse(command, option.flag, text(inside, option.kind))
            assert getattr(parsed, action.dest) == inside
            err = refusal(command, option.flag, text(outside, option.kind), capsys)
            assert f"argument {shown}: must be" in err, err
            checked += 1
        assert f"argument {shown}" in refusal(command, option.flag, "many", capsys)
    assert checked or command == "index"


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf"])
def test_an_upload_limit_is_refused_rather_than_made_one_byte(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "argument --max-upload-mb" in refusal("serve", "--max-upload-mb", value, capsys)


def test_a_service_setting_refused_as_a_whole_is_named_by_its_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archivist.cli.main import main

    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path))
    code = main(["worker", "--qdrant-url", "http://q:6333", "--files-url", "ftp://h/x"])
    assert code == 2
    assert "--files-url" in capsys.readouterr().err


def test_search_and_ask_take_as_many_hits_as_the_api(capsys: pytest.CaptureFixture[str]) -> None:
    assert field_bounds(SearchRequest, "top_k") == TOP_K.bounds()
    assert SearchRequest.model_fields["top_k"].default == TOP_K.default
    assert TOP_K.le == MAX_TOP_K  # the MCP search tool's
    for option in (MAX_PER_DOCUMENT, MIN_RELEVANCE):
        assert field_bounds(SearchRequest, option.field) == option.bounds()
    for command, needs in (("search", ["q"]), ("ask", ["q"])):
        parser = build_parser()
        assert parser.parse_args([command, *needs, "-k", "100"]).top_k == 100
        with pytest.raises(SystemExit):
            parser.parse_args([command, *needs, "-k", "101"])
        assert "argument -k/--top-k: must be a whole number from 1 to 100" in (
            capsys.readouterr().err
        )


@pytest.mark.parametrize("languages", ["eng;rm", "e", "eng+" * 16 + "eng"])
def test_ocr_languages_the_option_refuses_the_settings_refuse(
    languages: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from pydantic import ValidationError

    assert "argument --ocr-languages" in refusal("index", "--ocr-languages", languages, capsys)
    with pytest.raises(ValidationError):
        ServiceSettings(home=tmp_path, ocr_languages=tuple(languages.split("+")))
    default = parse("index").ocr_languages
    assert ServiceSettings(home=tmp_path, ocr_languages=default).ocr_languages == default
