"""docs/reference/cli.md is what scripts/gen_cli_reference.py writes from the CLI's parser
today: a command or option changed without running the script fails here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gen_cli_reference.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_cli_reference_matches_the_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    if sys.version_info >= (3, 13):  # `-k, --top-k K` where 3.11 and 3.12 print `-k K, --top-k K`
        pytest.skip("argparse of Python 3.13+ words options differently from the committed page")
    monkeypatch.setenv("COLUMNS", "88")  # render() sets these; monkeypatch restores them
    monkeypatch.setenv("NO_COLOR", "1")
    script = _script()
    page = script.PAGE
    assert page == ROOT / "docs" / "reference" / "cli.md"
    expected = script.render()
    assert page.read_text(encoding="utf-8") == expected, (
        "docs/reference/cli.md is out of date: run .venv/bin/python scripts/gen_cli_reference.py"
    )
    # every command has its section
    for command in ("index", "search", "serve", "keys create", "worker"):
        assert f"`archivist {command}`" in expected, command
