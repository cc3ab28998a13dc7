"""Helpers shared by the benchmark scripts: where things are, timing, result files."""

from __future__ import annotations

import json
import os
import platform
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
ROOT = BENCHMARKS.parent  # the repository
RESULTS = BENCHMARKS / "results"
TESTS = ROOT / "tests"
DATASETS = ROOT.parent / "shared" / "datasets"  # ../shared/datasets from the repository
SCIFACT = Path(os.environ.get("SCIFACT_DIR", DATASETS / "scifact"))


def best_of(fn: Callable[[], Any], repeat: int = 3) -> float:
    """The fastest of `repeat` wall-clock runs of `fn`, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_result(name: str, payload: dict[str, Any], folder: Path = RESULTS) -> Path:
    """Write `payload` to FOLDER/NAME.json (two-space JSON) and return the path.

    Every benchmark writes its figures through here, so each file also says which Python and
    machine measured them and when; a key of `payload` with the same name wins.
    """
    folder.mkdir(parents=True, exist_ok=True)
    payload = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **payload,
    }
    path = folder / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return path


def write_cache(path: Path, payload: Any) -> Path:
    """Write `payload` to `path` as compact JSON: inputs a case keeps between runs (such as
    embedded corpora under ~/.cache), never its figures, which go through `write_result`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path
