"""The distances a collection may rank by, and scores turned so that higher is better."""

from __future__ import annotations

from archivist.errors import InvalidArgumentError

DISTANCES = ("Cosine", "Dot", "Euclid", "Manhattan")


def check_distance(distance: object) -> str:
    """The canonical name of `distance` (case-insensitive); ValueError naming it otherwise."""
    if isinstance(distance, str):
        for name in DISTANCES:
            if name.lower() == distance.lower():
                return name
    raise InvalidArgumentError(
        f"distance must be one of {', '.join(DISTANCES)}; got {distance!r}", argument="distance"
    )


def higher_is_better(distance: str, raw_score: float) -> float:
    """An engine's score turned so that higher is better: Euclid and Manhattan distances negated."""
    return -raw_score if distance in {"Euclid", "Manhattan"} else raw_score
