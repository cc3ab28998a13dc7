"""The `stores` benchmark's window under concurrent load: its figures, its clients (tasks or
threads, the writer continuing the run's chunks), and how the report shows it."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def modules() -> Iterator[dict[str, ModuleType]]:
    paths = [str(BENCHMARKS), str(BENCHMARKS / "stores")]
    sys.path[:0] = paths
    try:
        import report_sections
        import stores_concurrent
        import stores_data
    finally:
        for path in paths:
            sys.path.remove(path)
    yield {
        "concurrent": stores_concurrent,
        "data": stores_data,
        "report": report_sections,
    }


def test_the_figures_split_the_modes_and_rate_the_writes(
    modules: dict[str, ModuleType],
) -> None:
    figures = modules["concurrent"].window_figures(
        {"dense": [float(ms) for ms in range(1, 101)], "hybrid": [5.0, 7.0, 9.0], "none": []},
        written=3_000,
        write_s=1.5,
        at_chunks=10_000,
        seconds=10,
        concurrency="threads",
    )
    assert figures["search"] == {
        "dense": {"p50_ms": 50.5, "p99_ms": 100.0, "searches": 100},
        "hybrid": {"p50_ms": 7.0, "p99_ms": 9.0, "searches": 3},
    }
    assert figures["searches"] == 103
    assert figures["chunks_per_s"] == 2_000
    assert figures["concurrency"] == "threads"
    assert "error" not in figures


class FakeDriver:
    """Records what the window asks of it, and in which threads."""

    modes = ("dense", "hybrid")

    def __init__(self, concurrency: str, blocking: bool = False) -> None:
        self.concurrency = concurrency
        self.blocking = blocking
        self.written: list[int] = []
        self.searched: list[tuple[str, str]] = []
        self.threads: set[int] = set()
        self.clients = 0

    async def prepare_clients(self, clients: int) -> None:
        self.clients = clients

    async def write(self, batch: Any) -> None:
        self.threads.add(threading.get_ident())
        self.written += batch.ids.tolist()
        await asyncio.sleep(0.01)

    async def search(self, vector: np.ndarray, text: str, tenant: str, mode: str) -> list[int]:
        self.threads.add(threading.get_ident())
        self.searched.append((tenant, mode))
        if self.blocking:
            time.sleep(0.002)  # a sync store under `async def`: never gives the loop back
        else:
            await asyncio.sleep(0.002)
        return []


def _data(modules: dict[str, ModuleType], folder: Path, measured: int) -> Any:
    rng = np.random.default_rng(0)
    dimensions = modules["data"].DIMENSIONS
    np.save(folder / "p.npy", rng.standard_normal((20, dimensions)).astype(np.float32))
    np.save(folder / "q.npy", rng.standard_normal((16, dimensions)).astype(np.float32))
    texts = {
        "sentences": [[f"Title {i}.", "A sentence.", "Another."] for i in range(20)],
        "query_texts": [f"claim {i}" for i in range(16)],
    }
    (folder / "t.json").write_text(json.dumps(texts), encoding="utf-8")
    return modules["data"].StoreData(
        folder / "p.npy", folder / "q.npy", folder / "t.json", measured, extra=100_000
    )


@pytest.mark.parametrize("concurrency", ["async", "threads"])
def test_the_window_searches_while_the_next_chunks_are_written(
    modules: dict[str, ModuleType], tmp_path: Path, concurrency: str
) -> None:
    data = _data(modules, tmp_path, 1_000)
    driver = FakeDriver(concurrency)
    figures = asyncio.run(modules["concurrent"].window(driver, data, 1_000, 0.4))

    batch = modules["data"].BATCH
    assert driver.clients == modules["concurrent"].CLIENTS + 1
    assert driver.written and driver.written == list(range(1_000, 1_000 + len(driver.written)))
    assert figures["written"] == len(driver.written) and len(driver.written) % batch == 0
    assert figures["search"]["dense"]["searches"] >= 8
    assert figures["search"]["hybrid"]["searches"] >= 8
    tenants = {f"t{t}" for t in data.query_tenants(1_000)}
    assert {tenant for tenant, _ in driver.searched} <= tenants
    main = threading.get_ident()
    if concurrency == "threads":
        assert main not in driver.threads and len(driver.threads) > 1
    else:
        assert driver.threads == {main}


def test_searches_that_block_the_loop_still_take_turns_with_the_writer(
    modules: dict[str, ModuleType], tmp_path: Path
) -> None:
    driver = FakeDriver("async", blocking=True)
    figures = asyncio.run(
        modules["concurrent"].window(driver, _data(modules, tmp_path, 1_000), 1_000, 0.4)
    )
    assert figures["written"] > 0
    assert figures["search"]["hybrid"]["p50_ms"] >= 2 * 8  # each waits for the others' turns


def test_the_fingerprint_ignores_the_window_headroom(
    modules: dict[str, ModuleType], tmp_path: Path
) -> None:
    data = _data(modules, tmp_path, 1_000)
    plain = modules["data"].StoreData(
        tmp_path / "p.npy", tmp_path / "q.npy", tmp_path / "t.json", 1_000
    )
    assert data.fingerprint() == plain.fingerprint()
    assert data.max_chunks == 101_000


def _run(window: dict[str, Any] | None) -> dict[str, Any]:
    row = {
        "chunks": 10_000,
        "insert_per_s": 1_000,
        "peak_rss_mb": 100.0,
        "disk_mb": 50.0,
        "search": {"dense": {"p50_ms": 1.0, "p99_ms": 2.0}},
        "recall@5": 1.0,
    }
    run: dict[str, Any] = {
        "status": "done",
        "seconds": 30,
        "rows": [{**row, "chunks": 1_000}, row],
    }
    if window is not None:
        run["concurrent"] = window
    return run


def test_the_table_shows_the_window_on_each_systems_last_row(
    modules: dict[str, ModuleType],
) -> None:
    window = modules["concurrent"].window_figures(
        {"dense": [1.0, 3.0, 5.0]},
        written=1_500,
        write_s=0.5,
        at_chunks=10_000,
        seconds=20,
        concurrency="async",
    )
    table = modules["report"].stores_table(
        {
            "concurrent_seconds": 20,
            "systems": {
                "archivist-edge": _run(window),
                "chroma": _run({"skipped": "the bound was reached"}),
                "lancedb": _run(None),
            },
        }
    )
    assert "under load 20 s: 8 searching + 1 writing" in table[0]
    rows = [line for line in table[2:] if line.startswith("| ")]
    assert len(rows) == 6
    assert all(row.endswith(" |") and row.count("|") == 10 for row in rows)
    assert rows[0].endswith("|  |")
    assert rows[1].endswith(
        "| dense 3.00 / 5.00; 1,500 chunks written at 3,000/s (async, 3 searches) |"
    )
    assert rows[3].endswith("| skipped (the bound was reached) |")
    assert rows[5].endswith("| — |")


def test_a_run_without_windows_keeps_its_columns(modules: dict[str, ModuleType]) -> None:
    table = modules["report"].stores_table({"systems": {"archivist-edge": _run(None)}})
    assert "under load" not in table[0]
    assert all(line.count("|") == 9 for line in table[:4])
