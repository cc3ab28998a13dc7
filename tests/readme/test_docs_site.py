"""The README is short; the docs site builds with `mkdocs build --strict` (every page in the
navigation, every link and anchor between pages found). Links as GitHub shows the Markdown:
test_doc_links.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_the_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def test_the_docs_site_builds_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "guides" / "search" / "index.html").is_file()
    # the references are drawn from the code: every command's options, the API's docstrings
    cli = (tmp_path / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for text in ("archivist index", "--rebuild", "archivist keys", "--all-copies", "exit codes"):
        assert text in cli, text
    api = (tmp_path / "reference" / "python" / "index.html").read_text(encoding="utf-8")
    for name in ("insert_documents", "max_per_document", "RAGMiddleware", "DocumentNotFoundError"):
        assert name in api, name
