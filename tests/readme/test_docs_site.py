"""The README is short and its links land; the docs site builds with `mkdocs build --strict`
(every page in the navigation, every link and anchor between pages found)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_the_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def _slug(heading: str) -> str:
    """The anchor of a Markdown heading (GitHub's and MkDocs' alike for plain headings)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_of_the_readme_lands() -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#([^)]+))?\)", README.read_text(encoding="utf-8"))
    local = [(target, anchor) for target, anchor in links if "://" not in target]
    assert len(local) > 10
    for target, anchor in local:
        path = ROOT / target
        assert path.exists(), target
        if anchor:
            headings = re.findall(r"^#+ (.*)$", path.read_text(encoding="utf-8"), re.MULTILINE)
            assert anchor in {_slug(h) for h in headings}, f"{target}#{anchor}"


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
