"""What users read speaks of the product as it is: no internal issue numbers in the README,
the docs or the package (docstrings, help, messages, the web page)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ISSUE = re.compile(r"\bissue[ -]\d+", re.IGNORECASE)
TEXT_SUFFIXES = {".py", ".md", ".html", ".js", ".css", ".txt", ".toml", ".json"}


def _user_facing() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files += [
        path
        for path in sorted((ROOT / "src" / "archivist").rglob("*"))
        if path.suffix in TEXT_SUFFIXES and "__pycache__" not in path.parts
    ]
    return [path for path in files if path.is_file()]


def test_no_internal_issue_numbers_in_what_users_read() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}"
        for path in _user_facing()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ISSUE.search(line)
    ]
    assert len(_user_facing()) > 100
    assert found == []
