"""Load benchmark for `archivist serve`, loopback only and bounded in time.

Builds (or reuses) a knowledge base of >= 10k chunks (the service runs with `--chunk-size 64`
so building it takes minutes, not an hour, on 2 cores) in a real `archivist serve` process,
measures search latency idle (50 clients, searches only), then runs 50 concurrent clients
for 60 s mixing 90% searches and 10% uploads, and reports errors, QPS, p50/p95/p99 and the
search p95 while uploads are indexing against the idle p95.

    .venv/bin/python -m benchmarks service_load            # 50 clients, 60 s
    .venv/bin/python -m benchmarks service_load --quick    # 10 clients, 10 s, 1k chunks
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from pathlib import Path

import httpx
from _common import BENCHMARKS, write_result
from service_helpers import ServeProcess, free_port

from archivist.service import ServiceSettings
from archivist.service.storage.database import make_engine
from archivist.service.storage.keys import create_key

KB = "load"
TENANT = "load-tenant"
VOCABULARY = [
    f"{a}{b}"
    for a in ("ar", "be", "ci", "do", "el", "fa", "gu", "hi", "io", "ju")
    for b in ("lam", "nor", "pex", "qua", "ris", "sol", "tum", "vek", "wyn", "zor")
]
TOPICS = [
    "invoices",
    "refunds",
    "holidays",
    "parking",
    "security",
    "travel",
    "laptops",
    "onboarding",
    "payroll",
    "compliance",
    "backups",
    "incidents",
]


def document(rng: random.Random, n: int, paragraphs: int) -> bytes:
    """A generated document of about `paragraphs` chunks."""
    parts = []
    for p in range(paragraphs):
        topic = rng.choice(TOPICS)
        words = " ".join(rng.choice(VOCABULARY) for _ in range(40))
        parts.append(f"Section {p} of file {n} is about {topic}. {words}.")
    return "\n\n".join(parts).encode()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index] * 1000


async def build(http: httpx.AsyncClient, target_chunks: int, rng: random.Random) -> int:
    """Upload generated files until the KB holds `target_chunks`; returns its chunk count."""
    await http.post("/v1/knowledge-bases", json={"name": KB})
    n = 0
    while True:
        items = (await http.get(f"/v1/knowledge-bases/{KB}/documents")).json()["items"]
        total = sum(d["chunk_count"] for d in items)
        pending = sum(d["status"] in ("queued", "indexing") for d in items)
        if total >= target_chunks and not pending:
            return total
        if pending < 40 and total + pending * 40 < target_chunks:
            files = [
                ("files", (f"base-{n + i:05d}.txt", document(rng, n + i, 40), "text/plain"))
                for i in range(20)
            ]
            n += 20
            response = await http.post(f"/v1/knowledge-bases/{KB}/documents", files=files)
            response.raise_for_status()
        print(f"\rbuilding: {total} chunks, {pending} pending", end="", flush=True)
        await asyncio.sleep(2)


async def run_clients(
    url: str, key: str, clients: int, seconds: float, upload_share: float, seed: int
) -> dict[str, list[tuple[float, float]]]:
    """`clients` loops for `seconds`; returns (start time, latency) per op kind, and errors."""
    samples: dict[str, list[tuple[float, float]]] = {"search": [], "upload": [], "error": []}
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        async with httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60, limits=limits
        ) as http:
            while time.monotonic() < deadline:
                start = time.monotonic()
                try:
                    if rng.random() < upload_share:
                        kind = "upload"
                        name = f"live-{index}-{rng.randrange(10**9)}.txt"
                        response = await http.post(
                            f"/v1/knowledge-bases/{KB}/documents",
                            files={"files": (name, document(rng, index, 2), "text/plain")},
                        )
                        ok = response.status_code == 202
                    else:
                        kind = "search"
                        query = f"{rng.choice(TOPICS)} {rng.choice(VOCABULARY)} policy"
                        response = await http.post(
                            f"/v1/knowledge-bases/{KB}/search", json={"query": query, "top_k": 5}
                        )
                        ok = response.status_code == 200 and len(response.json()["hits"]) == 5
                except httpx.HTTPError:
                    ok = False
                samples[kind if ok else "error"].append((start, time.monotonic() - start))

    await asyncio.gather(*(client(i) for i in range(clients)))
    return samples


async def pending_monitor(url: str, key: str, stop: asyncio.Event) -> list[tuple[float, int]]:
    """(time, documents queued or indexing), sampled every 0.5 s."""
    seen: list[tuple[float, int]] = []
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60
    ) as http:
        while not stop.is_set():
            items = (await http.get(f"/v1/knowledge-bases/{KB}/documents")).json()["items"]
            busy = sum(d["status"] in ("queued", "indexing") for d in items)
            seen.append((time.monotonic(), busy))
            await asyncio.sleep(0.5)
    return seen


def indexing_at(start: float, pending: list[tuple[float, int]]) -> bool:
    earlier = [count for when, count in pending if when <= start]
    return bool(earlier) and earlier[-1] > 0


async def main_async(args: argparse.Namespace) -> dict[str, object]:
    home = Path(args.home)
    settings = ServiceSettings(home=home)
    engine = make_engine(settings.resolved_database_url)
    key = create_key(engine, TENANT).key
    engine.dispose()
    server = ServeProcess(
        home,
        free_port(),
        *("--chunk-size", str(args.chunk_size), "--overlap", str(args.chunk_size // 8)),
    )
    server.start()
    try:
        async with httpx.AsyncClient(
            base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=120
        ) as http:
            chunks = await build(http, args.chunks, random.Random(1))
        print(f"\nknowledge base ready: {chunks} chunks", flush=True)
        idle = await run_clients(server.url, key, args.clients, args.idle_seconds, 0.0, 2)
        stop = asyncio.Event()
        monitor = asyncio.create_task(pending_monitor(server.url, key, stop))
        started = time.monotonic()
        mixed = await run_clients(server.url, key, args.clients, args.seconds, 0.10, 3)
        elapsed = time.monotonic() - started
        stop.set()
        pending = await monitor
    finally:
        server.stop()
    idle_search = [lat for _, lat in idle["search"]]
    busy_search = [lat for when, lat in mixed["search"] if indexing_at(when, pending)]
    all_ops = [lat for kind in ("search", "upload") for _, lat in mixed[kind]]
    return {
        "clients": args.clients,
        "seconds": args.seconds,
        "kb_chunks": chunks,
        "chunk_size": args.chunk_size,
        "errors": len(mixed["error"]) + len(idle["error"]),
        "requests": len(all_ops),
        "qps": len(all_ops) / elapsed,
        "searches": len(mixed["search"]),
        "uploads": len(mixed["upload"]),
        "p50_ms": percentile(all_ops, 50),
        "p95_ms": percentile(all_ops, 95),
        "p99_ms": percentile(all_ops, 99),
        "search_p50_ms": percentile([lat for _, lat in mixed["search"]], 50),
        "search_p95_ms": percentile([lat for _, lat in mixed["search"]], 95),
        "upload_p95_ms": percentile([lat for _, lat in mixed["upload"]], 95),
        "idle_qps": len(idle_search) / args.idle_seconds,
        "idle_search_p95_ms": percentile(idle_search, 95),
        "indexing_search_p95_ms": percentile(busy_search, 95),
        "indexing_searches": len(busy_search),
        "indexing_share_of_time": statistics.fmean(c > 0 for _, c in pending) if pending else 0,
        "ratio_indexing_vs_idle_p95": percentile(busy_search, 95) / percentile(idle_search, 95),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", default=str(BENCHMARKS / ".cache" / "service-load"))
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--idle-seconds", type=float, default=20)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--chunk-size", type=int, default=64, help="the service's --chunk-size")
    parser.add_argument("--quick", action="store_true", help="10 clients, 10 s, 1k chunks")
    args = parser.parse_args(argv)
    if args.quick:
        args.clients, args.seconds, args.idle_seconds, args.chunks = 10, 10, 5, 1000
        args.home = str(Path(args.home).with_name("service-load-quick"))
    result = asyncio.run(main_async(args))
    write_result("service_load-quick" if args.quick else "service_load", result)
    for name, value in result.items():
        print(f"{name:28} {value:.2f}" if isinstance(value, float) else f"{name:28} {value}")
    if result["errors"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
