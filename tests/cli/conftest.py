"""Fixtures of the CLI tests, which call `archivist.cli.main.main` in-process wherever the
process boundary proves nothing (a subprocess stays for signals, locks across processes, the
console script and startup imports)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archivist.embedding import DEFAULT_EMBEDDING_MODEL, EmbeddingModelBase
from archivist.embedding.registry import _registry

_LOADED: list[EmbeddingModelBase] = []


@pytest.fixture(autouse=True)
def one_default_model_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process runs share one loaded default model, as one `archivist` process does.

    A real run loads the model once; building its ONNX sessions again for every `main()` call
    here would only repeat that load (about 0.25 s of CPU each). Models built with overrides
    and other registered names are built as usual.
    """
    factory = _registry[DEFAULT_EMBEDDING_MODEL]

    def shared(**overrides: Any) -> EmbeddingModelBase:
        if overrides:
            return factory(**overrides)
        if not _LOADED:
            _LOADED.append(factory())
        return _LOADED[0]

    monkeypatch.setitem(_registry, DEFAULT_EMBEDDING_MODEL, shared)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ARCHIVIST_HOME under `tmp_path`, the working directory, at 80 columns."""
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"
