"""`archivist eval --calibration`: the reliability of the relevance shown, against judgments."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from archivist.cli.eval_command import add_eval_command
from archivist.eval.calibration import SHOWN, reliability


def test_hits_are_binned_by_relevance_with_the_share_judged_relevant() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    shown = [
        ("q1", "a", 0.95),  # right, first, above the threshold
        ("q1", "x", 0.91),
        ("q1", "y", 0.12),
        ("q2", "b", 0.18),  # right, first, below the threshold
        ("q2", "z", 0.11),
    ]
    result = reliability(shown, qrels)
    bins = {(round(b.low, 1), b.hits, round(b.shown, 3), b.relevant) for b in result.bins}
    assert bins == {(0.9, 2, 0.93, 0.5), (0.1, 3, 0.137, 1 / 3)}
    assert result.hits == 5
    assert result.expected_calibration_error == pytest.approx(
        (2 * 0.43 + 3 * (1 / 3 - 0.41 / 3)) / 5
    )
    assert (result.right_first, result.right_first_at_threshold) == (2, 1)


def test_only_the_first_page_of_each_query_counts_and_relevance_1_is_binned() -> None:
    shown = [("q", f"d{i}", 1.0) for i in range(SHOWN + 5)]
    result = reliability(shown, {"q": {"d0": 2}})
    (top,) = result.bins
    assert (top.low, top.hits, top.relevant) == (0.9, SHOWN, 0.1)
    assert reliability([], {}).hits == 0


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_eval_command(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


async def test_the_cli_prints_the_table_and_json_holds_it(
    beir_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = ["--cache-dir", str(tmp_path / "c")]
    args = _parse(["eval", str(beir_dir), "--calibration", *cache])
    assert await args.handler(args) == 0
    out = capsys.readouterr().out
    assert "relevance shown" in out and "judged relevant" in out and "calibration error" in out
    assert max(map(len, out.splitlines())) <= 80
    args = _parse(["eval", str(beir_dir), "--calibration", "--json", *cache])
    assert await args.handler(args) == 0
    calibration = json.loads(capsys.readouterr().out)["calibration"]
    assert calibration["hits"] == sum(b["hits"] for b in calibration["bins"]) > 0
    assert calibration["right_first"] == 3  # each tiny topic's document comes first
    args = _parse(["eval", str(beir_dir), "--json", *cache])
    assert await args.handler(args) == 0
    assert json.loads(capsys.readouterr().out)["calibration"] is None
