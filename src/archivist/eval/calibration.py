"""How well shown relevance matches judged relevance: the reliability table of a run.

Each query's first `SHOWN` hits (what a user reads) are binned by the relevance they show;
each bin reports its hits, their mean shown relevance and the share of them whose document
is judged relevant. Calibrated relevance has the two alike in every bin. The expected
calibration error is the hit-weighted mean of their differences.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel
from rich.table import Table

from archivist.rag.store.core.relevance import DEFAULT_MIN_RELEVANCE

SHOWN = 10
"""Hits of each query that count: the first page of results."""
BINS = 10
"""Equal-width bins of shown relevance."""


class ReliabilityBin(BaseModel):
    """Hits shown with relevance in [low, high)."""

    low: float
    high: float
    hits: int
    shown: float
    """Mean relevance shown."""
    relevant: float
    """Share of the hits judged relevant."""


class Calibration(BaseModel):
    """The reliability table of a run, its expected calibration error, and how many right
    answers ranked first are shown at the suggested threshold or above."""

    bins: list[ReliabilityBin]
    hits: int
    expected_calibration_error: float
    right_first: int
    right_first_at_threshold: int
    threshold: float = DEFAULT_MIN_RELEVANCE


Shown = tuple[str, str, float]
"""(query id, document id, relevance shown) of one hit, in the order listed."""


def reliability(shown: Sequence[Shown], qrels: Mapping[str, Mapping[str, int]]) -> Calibration:
    """The calibration of `shown` hits (each query's in order; only its first `SHOWN`
    count) against the judgments `qrels`."""
    seen: dict[str, int] = {}
    pairs: list[tuple[float, bool]] = []
    right_first = kept = 0
    for query, document, relevance in shown:
        position = seen.get(query, 0)
        seen[query] = position + 1
        if position >= SHOWN:
            continue
        relevant = qrels.get(query, {}).get(document, 0) > 0
        pairs.append((relevance, relevant))
        if position == 0 and relevant:
            right_first += 1
            kept += relevance >= DEFAULT_MIN_RELEVANCE
    bins = []
    for index in range(BINS):
        low, high = index / BINS, (index + 1) / BINS
        inside = [
            (p, y) for p, y in pairs if low <= p < high or (index == BINS - 1 and p == 1.0)
        ]
        if inside:
            bins.append(
                ReliabilityBin(
                    low=low,
                    high=high,
                    hits=len(inside),
                    shown=sum(p for p, _ in inside) / len(inside),
                    relevant=sum(y for _, y in inside) / len(inside),
                )
            )
    error = sum(b.hits * abs(b.shown - b.relevant) for b in bins) / max(len(pairs), 1)
    return Calibration(
        bins=bins,
        hits=len(pairs),
        expected_calibration_error=error,
        right_first=right_first,
        right_first_at_threshold=kept,
    )


def calibration_table(result: Calibration, title: str) -> Table:
    """The reliability table as rich renders it, at most 80 columns wide."""
    table = Table(title=title)
    table.add_column("relevance shown")
    table.add_column("hits", justify="right")
    table.add_column("mean shown", justify="right")
    table.add_column("judged relevant", justify="right")
    for b in result.bins:
        table.add_row(
            f"{b.low:.1f}-{b.high:.1f}", str(b.hits), f"{b.shown:.3f}", f"{b.relevant:.3f}"
        )
    table.caption = (
        f"calibration error {result.expected_calibration_error:.3f} over {result.hits} hits; "
        f"right answers ranked first shown at >= {result.threshold}: "
        f"{result.right_first_at_threshold}/{result.right_first}"
    )
    return table
