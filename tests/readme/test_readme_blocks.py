"""Every Python block of the README and the docs runs as written, with pytest-markdown-docs,
in a fresh `ARCHIVIST_HOME` with the package's console script on PATH, from an empty folder
outside the clone (as after `pip install archivist`: a path relative to the clone's root,
such as `samples/...`, is not there); a block marked
`notest` (it needs a chat model or a server) must still compile. Every other fenced block is
checked by its language: shell is parsed by bash, JSON and YAML must load, `text` is output;
a block of any other language (or none) fails."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```python( notest)?\n(.*?)^```$", re.MULTILINE | re.DOTALL)
ANY_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _blocks() -> list[tuple[str, str]]:
    return [block for page in PAGES for block in FENCE.findall(page.read_text(encoding="utf-8"))]


def test_the_python_blocks_run(tmp_path: Path) -> None:
    pytest.importorskip("pytest_markdown_docs")
    scripts = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "ARCHIVIST_HOME": str(tmp_path / "home"),
        "PATH": scripts + os.pathsep + os.environ.get("PATH", ""),
    }
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, "-p", "pytest_markdown_docs", "--markdown-docs", *map(str, PAGES)],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    ran = re.search(r"(\d+) passed", done.stdout)
    runnable = [code for notest, code in _blocks() if not notest]
    assert ran is not None and int(ran.group(1)) == len(runnable) >= 4


def test_blocks_that_need_a_service_or_a_model_still_compile() -> None:
    skipped = [code for notest, code in _blocks() if notest]
    assert skipped
    for code in skipped:
        compile(code, "a notest block", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def _fenced() -> list[tuple[str, str, str]]:
    """(page, info string, code) of every fenced block."""
    return [
        (page.name, info.strip(), code)
        for page in PAGES
        for info, code in ANY_FENCE.findall(page.read_text(encoding="utf-8"))
    ]


def test_every_other_fenced_block_is_checked_by_its_language() -> None:
    yaml = pytest.importorskip("yaml")
    blocks = _fenced()
    assert len(blocks) > 20
    for page, info, code in blocks:
        language = info.removesuffix(" notest")
        if language == "python":
            continue  # run or compiled above
        if language == "bash":
            done = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True)
            assert done.returncode == 0, f"{page}: {done.stderr}"
        elif language == "json":
            json.loads(code)
        elif language == "yaml":
            yaml.safe_load(code)
        else:
            assert language == "text", f"{page}: a ```{info} block is checked by no test"
