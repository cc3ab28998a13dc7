"""The `stores` benchmark's window under concurrent load: after a system's last checkpoint,
`CLIENTS` clients search while one writer inserts the run's next chunks, for a few seconds.

numpy and the standard library only (every driver's venv imports it). Each search client
walks the held-out queries from its own offset with the checkpoint's tenants, alternating the
system's modes (dense, hybrid); a search is timed from when its client asks, so its wait for
a loop busy with the other clients counts, as a caller's would. The writer writes batches of
500 continuing from the chunks already written, so every system gets the same extra chunks.
A driver whose calls block (a sync API under `async def`) says `concurrency = "threads"`:
each client then runs in its own thread (with its own event loop); otherwise all clients are
tasks of the driver's loop. A driver that needs a connection per client has
`prepare_clients(n)`.
"""

from __future__ import annotations

import asyncio
import functools
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from stores_data import BATCH, StoreData, StoreDriver, percentile

CLIENTS = 8
"""Search clients; one writer beside them."""
HEADROOM = 1_000_000
"""Chunks the window's writer may add past the run's last step."""


def window_figures(
    latencies: dict[str, Sequence[float]],
    written: int,
    write_s: float,
    *,
    at_chunks: int,
    seconds: float,
    concurrency: str,
    error: str | None = None,
) -> dict[str, Any]:
    """What a window reports: searches done, p50/p99 ms per mode, chunks written and their
    rate over the time spent in write calls."""
    search = {
        mode: {
            "p50_ms": round(statistics.median(times), 3),
            "p99_ms": round(percentile(times, 0.99), 3),
            "searches": len(times),
        }
        for mode, times in latencies.items()
        if times
    }
    figures: dict[str, Any] = {
        "at_chunks": at_chunks,
        "seconds": seconds,
        "clients": CLIENTS,
        "concurrency": concurrency,
        "searches": sum(len(times) for times in latencies.values()),
        "search": search,
        "written": written,
        "write_s": round(write_s, 2),
        "chunks_per_s": round(written / write_s) if write_s > 0 else 0,
    }
    if error is not None:
        figures["error"] = error
    return figures


async def window(
    driver: StoreDriver, data: StoreData, at_chunks: int, seconds: float
) -> dict[str, Any]:
    """Run the window on `driver` holding the first `at_chunks` chunks; its figures."""
    concurrency = getattr(driver, "concurrency", "async")
    prepare = getattr(driver, "prepare_clients", None)
    if prepare is not None:
        await prepare(CLIENTS + 1)
    tenants = data.query_tenants(at_chunks)
    queries = len(data.query_vectors)
    latencies: dict[str, list[float]] = {mode: [] for mode in driver.modes}
    errors: list[str] = []
    wrote = {"chunks": 0, "seconds": 0.0}
    end = time.monotonic() + seconds

    async def searcher(client: int) -> None:
        first = client * queries // CLIENTS
        done = 0
        while time.monotonic() < end and not errors:
            mode = driver.modes[done % len(driver.modes)]
            q = (first + done) % queries
            started = time.perf_counter()
            await asyncio.sleep(0)  # the others' turn: no client holds the loop for two searches
            await driver.search(data.query_vectors[q], data.query_texts[q], f"t{tenants[q]}", mode)
            latencies[mode].append(1000 * (time.perf_counter() - started))
            done += 1

    async def writer() -> None:
        position = at_chunks
        while time.monotonic() < end and not errors and position + BATCH <= data.max_chunks:
            batch = await asyncio.to_thread(data.batch, position, BATCH)
            started = time.perf_counter()
            await driver.write(batch)
            wrote["seconds"] += time.perf_counter() - started
            wrote["chunks"] += len(batch)
            position += len(batch)

    async def guarded(client: Callable[[], Awaitable[None]]) -> None:
        try:
            await client()
        except Exception as error:  # reported with the figures, the window ends
            errors.append(f"{type(error).__name__}: {error}")

    clients: list[Callable[[], Awaitable[None]]] = [
        *(functools.partial(searcher, c) for c in range(CLIENTS)),
        writer,
    ]
    if concurrency == "threads":
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(max_workers=len(clients)) as pool:
            await asyncio.gather(
                *(loop.run_in_executor(pool, asyncio.run, guarded(client)) for client in clients)
            )
    else:
        await asyncio.gather(*(guarded(client) for client in clients))
    return window_figures(
        latencies,
        wrote["chunks"],
        wrote["seconds"],
        at_chunks=at_chunks,
        seconds=seconds,
        concurrency=concurrency,
        error=errors[0] if errors else None,
    )
