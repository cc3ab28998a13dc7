"""A CLI home with indexed knowledge bases, shared by the MCP tests of one module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import DOCS, SECRET

from archivist.cli.main import main


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An ARCHIVIST_HOME with knowledge base `pets` (no tenant) and `plans` (tenant acme)."""
    root = tmp_path_factory.mktemp("mcp")
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    secret = root / "secret"
    secret.mkdir()
    (secret / "plan.txt").write_text(SECRET)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARCHIVIST_HOME", str(root / "home"))
        assert main(["index", str(docs), "--kb", "pets"]) == 0
        assert main(["index", str(secret), "--kb", "plans", "--tenant", "acme"]) == 0
        yield root / "home"
