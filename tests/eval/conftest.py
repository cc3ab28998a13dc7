"""The tiny BEIR-layout dataset of `beir_files`, written into tmp_path."""

from pathlib import Path

import pytest
from beir_files import write_beir


@pytest.fixture
def beir_dir(tmp_path: Path) -> Path:
    return write_beir(tmp_path / "tiny")
