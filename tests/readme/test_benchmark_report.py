"""`benchmarks/results/REPORT.md` is what the suite's runner renders: today's figures only,
short enough to read, every section beyond the suite drawn from the JSON files beside it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
REPORT = RESULTS / "REPORT.md"


@pytest.fixture(scope="module")
def report_sections() -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import report_sections as module
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


def test_the_report_is_short() -> None:
    assert len(REPORT.read_text(encoding="utf-8").splitlines()) <= 300


def test_the_sections_beyond_the_suite_are_rendered_from_the_results(
    report_sections: ModuleType,
) -> None:
    text = REPORT.read_text(encoding="utf-8")
    trust = report_sections.render_search_trust(RESULTS)
    others = report_sections.render_other_scripts()
    assert trust and trust[0] == "## Search you can trust"
    assert "\n".join(trust) in text, (
        "REPORT.md is stale: run python -m benchmarks suite --report-only"
    )
    assert "\n".join(others) in text
    for render in (report_sections.render_hostile_uploads, report_sections.render_store_pauses):
        section = render(RESULTS)
        assert section, render.__name__
        assert "\n".join(section) in text, (
            "REPORT.md is stale: run python -m benchmarks suite --report-only"
        )


def test_every_case_the_report_names_exists(report_sections: ModuleType) -> None:
    listing = subprocess.run(
        [sys.executable, "-m", "benchmarks"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    cases = {line.split()[0] for line in listing.splitlines() if line.startswith("  ")}
    named = [
        cell.split()[0]
        for _, commands, _ in report_sections.OTHER_SCRIPTS
        for cell in commands.split("`")[1::2]
    ]
    trust = "\n".join(report_sections.render_search_trust(RESULTS))
    named += re.findall(re.escape(report_sections.PY) + r"(\w+)", trust)
    assert len(named) > 20
    for name in named:
        assert name in cases, name


def _row(chunks: int, insert: float, dense99: float = 10.0) -> dict[str, object]:
    return {
        "chunks": chunks,
        "insert_per_s": insert,
        "disk_mb": 100.0,
        "peak_rss_mb": 100.0,
        "recall@5": 1.0,
        "search": {"dense": {"p50_ms": 1.0, "p99_ms": dense99, "warm_p99_ms": dense99 * 2}},
    }


def test_the_targets_table_compares_inserts_where_both_systems_got_in_one_run(
    report_sections: ModuleType,
) -> None:
    run = {
        "systems": {
            "archivist-pgvector": {"rows": [_row(10, 400), _row(100, 300), _row(1000, 100)]},
            "pgvector-raw": {"rows": [_row(10, 500), _row(100, 500)]},
            "archivist-pgvector-bulk": {"rows": [_row(10, 2500), _row(100, 1500)]},
        }
    }
    lines = "\n".join(report_sections.stores_targets([("one", run)]))
    # At 100 chunks, the furthest both reached (not the store's own furthest): 300 / 500.
    assert "inserts ≥ 0.8× pgvector's own at 100 | 0.60× | **not met**" in lines
    # A bulk load's rate is its slowest step's.
    assert "index builds included, to 100 | 1,500/s | **not met**" in lines
    # Latency is the worse of the first pass and the warm one.
    assert "dense p99 ≤ 50 ms at 1,000 | 20.0 ms | met" in lines
