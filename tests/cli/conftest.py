"""Fixtures of the CLI tests, which call `archivist.cli.main.main` in-process wherever the
process boundary proves nothing (a subprocess stays for signals, locks across processes, the
console script and startup imports)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ARCHIVIST_HOME under `tmp_path`, the working directory, at 80 columns."""
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"
