"""The rule of tests that need a system program (tests/system_programs.py), run on a small
generated test file: skipped where the program is missing, the reason naming the packages to
install; failed with the same reason under ARCHIVIST_SYSTEM_TESTS=required, as in CI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from system_programs import NEEDS, VARIABLE

ROOT = Path(__file__).resolve().parents[1]
NEEDING = """
from system_programs import Need, require

ABSENT = Need("the frobnicator", ("frobnicator", "frobnicator-data"), lambda: False)
PRESENT = Need("bash", ("bash",), lambda: True)


@ABSENT.mark
def test_marked():
    pass


def test_calling():
    require(PRESENT, ABSENT)


@PRESENT.mark
def test_present():
    pass
"""
REASON = "needs the frobnicator: apt-get install -y frobnicator frobnicator-data"


def _run(pytester: pytest.Pytester) -> pytest.RunResult:
    pytester.makepyfile(test_needing=NEEDING)
    return pytester.runpytest("--disable-plugin-autoload", "-p", "system_programs", "-rsfE")


def test_a_missing_program_skips_its_tests_naming_the_packages(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(VARIABLE, raising=False)
    result = _run(pytester)
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines([f"SKIPPED [[]2[]] *: {REASON}"])  # the marker's, require()'s


def test_where_system_tests_are_required_a_missing_program_fails_its_tests(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, "required")
    result = _run(pytester)
    # The marker is checked before the test's fixtures run: an error at setup.
    result.assert_outcomes(passed=1, failed=1, errors=1)
    # Each report shows the reason on a line of its own (the summary lines may be cut to width).
    assert result.stdout.lines.count(f"{REASON} ({VARIABLE}=required)") == 2


def test_another_value_of_the_variable_stops_the_run_naming_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, "yes")
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{VARIABLE}='yes': expected 'required' or nothing" in result.stderr.str()


def test_ci_installs_every_package_a_need_names_and_requires_every_need() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    listed = re.search(r'^PACKAGES="([^"]*)"$', script, re.MULTILINE)
    assert listed is not None, "no PACKAGES=... line in .ci/run"
    named = {package for need in NEEDS for package in need.packages}
    assert named - set(listed.group(1).split()) == set()
    assert f"export {VARIABLE}=required" in script
