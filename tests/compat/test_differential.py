"""Differential tests: each scenario in `scenarios/` is AgentScope 2.0.11 user code. It runs as
written in AgentScope's venv, and with only its `agentscope` imports changed to `archivist` in
ours; both print JSON and the results must agree, except where a difference is deliberate.

A deliberate difference is listed in `DELIBERATE` with its reason (the docs' "Coming from
AgentScope" section lists the same) and Archivist's expected value, so it is still asserted.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCENARIOS = Path(__file__).parent / "scenarios"
IMPORT = re.compile(r"^(\s*)(from|import) agentscope\b", re.MULTILINE)

# scenario → key → (reason, Archivist's value)
DELIBERATE: dict[str, dict[str, tuple[str, Any]]] = {
    "parse_and_chunk": {
        "approx_chunk_count": ("windows end at a paragraph, sentence or word break", 5),
        "approx_total": ("windows end at a paragraph, sentence or word break", [5]),
    },
    "office_parsers": {
        "excel_args": (
            "AgentScope's arguments in its order, plus keyword-only max_rows_per_section and "
            "ocr (the text of its pictures)",
            [
                "include_sheet_names",
                "include_cell_coordinates",
                "include_image",
                "separate_sheet",
                "table_format",
                "max_rows_per_section",
                "ocr",
            ],
        ),
        "word_args": (
            "AgentScope's arguments in its order, plus keyword-only ocr (the text of its "
            "pictures)",
            ["include_image", "separate_table", "table_format", "ocr"],
        ),
        "excel_media_types": (
            "legacy .xls is not read (no xlrd dependency)",
            ["application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"],
        ),
        "word_sections": (
            "a Section per heading, with its heading_path, so chunks cite where they are",
            [["TextBlock", ["heading_path"], "pets.docx"]] * 2,
        ),
        "excel_sections": (
            "a Section per sheet (block of rows), with sheet and rows metadata",
            [["TextBlock", ["rows", "sheet"], "zoo.xlsx"]] * 2,
        ),
    },
    "knowledge_base_flow": {
        "listed": (
            "a DocumentSummary's metadata comes from chunk 0, not from any one chunk",
            [
                ["cats", "cats.txt", 2, {"lang": "en", "page": 1}],
                ["dogs", "dogs.txt", 3, {"lang": "en", "page": 1}],
                ["fish", "fish.txt", 1, {"lang": "en", "page": 1}],
            ],
        ),
        "after_reinsert": (
            "re-inserting a document id replaces the whole document (AgentScope keeps the "
            "old chunks past the new count)",
            [
                ["cats", "cats.txt", 1, {"page": 1}],
                ["dogs", "dogs.txt", 3, {"lang": "en", "page": 1}],
                ["fish", "fish.txt", 1, {"lang": "en", "page": 1}],
            ],
        ),
        "after_delete": (
            "follows from the whole-document re-insert above",
            [
                ["cats", "cats.txt", 1, {"page": 1}],
                ["fish", "fish.txt", 1, {"lang": "en", "page": 1}],
            ],
        ),
        "tenant_views": (
            "two tenants writing one document id into a shared collection keep their own "
            "chunks (AgentScope's point ids collide and the second tenant overwrites the first)",
            {"a": ["Alpha secret."], "b": ["Beta secret."]},
        ),
        "store_insert_twice": (
            "a DocumentSummary's metadata comes from chunk 0",
            [["r", "r.txt", 3, {"page": 1}]],
        ),
    },
}


def _ported(directory: Path) -> Path:
    """The scenarios with their AgentScope imports turned into Archivist imports."""
    directory.mkdir()
    for script in SCENARIOS.glob("*.py"):
        (directory / script.name).write_text(IMPORT.sub(r"\1\2 archivist", script.read_text()))
    return directory


def _run(python: Path | str, script: Path) -> dict[str, Any]:
    done = subprocess.run(
        [str(python), str(script)], capture_output=True, text=True, timeout=600, cwd=script.parent
    )
    assert done.returncode == 0, f"{python} {script.name} failed:\n{done.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# heavy: the first run installs AgentScope 2.0.11 into a second venv (about two minutes from
# the package index on a clean clone), and each scenario runs two interpreters.
@pytest.mark.heavy
@pytest.mark.parametrize(
    "scenario", sorted(p.stem for p in SCENARIOS.glob("*.py") if not p.stem.startswith("_"))
)
def test_scenario_agrees_with_agentscope(
    scenario: str, agentscope_python: Path, tmp_path: Path
) -> None:
    theirs = _run(agentscope_python, SCENARIOS / f"{scenario}.py")
    ours = _run(sys.executable, _ported(tmp_path / "ported") / f"{scenario}.py")
    assert sorted(ours) == sorted(theirs)
    deliberate = DELIBERATE.get(scenario, {})
    for key, value in theirs.items():
        if key in deliberate:
            reason, expected = deliberate[key]
            assert ours[key] == expected, f"{scenario}.{key} ({reason})"
            assert ours[key] != value, f"{scenario}.{key} now agrees: drop it from DELIBERATE"
        else:
            assert ours[key] == value, f"{scenario}.{key}: Archivist differs from AgentScope"


def test_only_imports_change_when_porting(tmp_path: Path) -> None:
    for original in SCENARIOS.glob("*.py"):
        ported = (_ported(tmp_path / original.stem) / original.name).read_text()
        changed = [
            (a, b)
            for a, b in zip(original.read_text().splitlines(), ported.splitlines(), strict=True)
            if a != b
        ]
        assert all(re.match(r"\s*(from|import) archivist\b", b) for _, b in changed), changed
