"""`python -m benchmarks` is the one way into every benchmark: it lists each script as a case
with a one-line description, runs any case by name with that case's own options, and every
case writes its figures through the one writer, `_common.write_result`.

The cases run here with `--help` only: that parses the case's options and imports its module,
so a case that would not start fails here, without any benchmark running.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
# The scripts that are cases although not named bench_NAME.py, by case name.
OTHER_CASES = {
    "suite": "quality/run_suite.py",
    "calibrate_relevance": "quality/calibrate_relevance.py",
    "relevance_data": "quality/relevance_data.py",
    "probe_onnx_memory": "ingest/probe_onnx_memory.py",
    "alternate": "alternate.py",
}


def _runner(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _python_files() -> list[Path]:
    """Every script of the benchmarks: the shared ones, and those of each folder."""
    return sorted([*BENCHMARKS.glob("*.py"), *BENCHMARKS.glob("[!.]*/*.py")])


def _scripts() -> dict[str, Path]:
    """Every case the runner must offer, by name, with its script."""
    found = {
        path.stem.removeprefix("bench_"): path
        for path in _python_files()
        if path.stem.startswith("bench_")
    }
    return {**found, **{name: BENCHMARKS / file for name, file in OTHER_CASES.items()}}


@pytest.fixture(scope="module")
def listing() -> dict[str, str]:
    """The runner's list of cases: name -> description."""
    done = _runner()
    assert done.returncode == 0, done.stderr
    rows = [line.split(None, 1) for line in done.stdout.splitlines() if line.startswith("  ")]
    return {row[0]: row[1] if len(row) > 1 else "" for row in rows}


def test_every_benchmark_script_is_a_case(listing: dict[str, str]) -> None:
    assert len(_scripts()) > 30
    assert set(listing) == set(_scripts())


def test_each_case_is_described_by_its_docstring_summary(listing: dict[str, str]) -> None:
    for name, script in _scripts().items():
        doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8")))
        assert doc, f"{script.name} has no docstring"
        lines = doc.splitlines()
        # a summary that stands alone on its line, as the list shows it
        assert len(lines) == 1 or not lines[1].strip(), f"{script.name}: summary runs on"
        assert listing[name] == lines[0], name


def test_help_lists_the_cases_too() -> None:
    plain, helped = _runner(), _runner("--help")
    assert helped.returncode == 0
    assert helped.stdout == plain.stdout
    assert "python -m benchmarks NAME" in helped.stdout


def test_an_unknown_case_is_refused() -> None:
    done = _runner("no_such_case")
    assert done.returncode == 2
    assert "no case named 'no_such_case'" in done.stderr


def test_every_case_answers_help(listing: dict[str, str]) -> None:
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {name: pool.submit(_runner, name, "--help") for name in listing}
        answers = {name: future.result() for name, future in futures.items()}
    for name, done in answers.items():
        assert done.returncode == 0, f"{name}: {done.stderr[-2000:]}"
        assert done.stdout.startswith(f"usage: python -m benchmarks {name}"), name


@pytest.fixture(scope="module")
def common() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import _common as module
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def test_results_go_through_the_one_writer(common: ModuleType, tmp_path: Path) -> None:
    path = common.write_result("figures", {"when": "earlier", "seconds": 1.5}, tmp_path)
    assert path == tmp_path / "figures.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["seconds"] == 1.5
    assert data["when"] == "earlier"  # the payload's own key wins
    assert {"python", "machine"} <= data.keys()


def test_no_benchmark_writes_json_by_hand() -> None:
    by_hand = re.compile(r"json\.dump\(|write_text\(\s*json\.dumps")
    for script in _python_files():
        if script.name != "_common.py":
            assert not by_hand.search(script.read_text(encoding="utf-8")), script.name


def test_no_two_scripts_share_a_module_name() -> None:
    # the cases import each other by bare module name, across the folders
    stems = [script.stem for script in _python_files()]
    assert len(stems) == len(set(stems))
