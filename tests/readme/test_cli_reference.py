"""docs/reference/cli.md is what scripts/gen_cli_reference.py writes from the CLI's parser
today: a command or option changed without running the script fails here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gen_cli_reference.py"
PAGE = ROOT / "docs" / "reference" / "cli.md"


def test_the_committed_cli_reference_matches_the_parser() -> None:
    if sys.version_info >= (3, 13):  # `-k, --top-k K` where 3.11 and 3.12 print `-k K, --top-k K`
        pytest.skip("argparse of Python 3.13+ words options differently from the committed page")
    # A fresh interpreter without ARCHIVIST_* settings: the page shows the parser as installed,
    # not what this process registered or its environment set as defaults.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARCHIVIST_")}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--print"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    )
    expected = done.stdout
    assert PAGE.read_text(encoding="utf-8") == expected, (
        "docs/reference/cli.md is out of date: run .venv/bin/python scripts/gen_cli_reference.py"
    )
    for command in ("index", "search", "serve", "keys create", "worker", "doctor"):
        assert f"`archivist {command}`" in expected, command
