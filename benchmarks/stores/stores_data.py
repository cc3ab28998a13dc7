"""The chunks, tenants and queries of the `stores` benchmark, and the loop its drivers share.

numpy and the standard library only: the project's venv, AgentScope's (`.venv-agentscope`) and
the peers' (`.venv-peers`, Chroma and LanceDB) all import it, so every system writes and
searches byte-identical vectors, texts and tenants (each driver reports `fingerprint()`, and
the case checks they agree).

The data, from P SciFact passages embedded once by the case (`bench_stores.py`):

- chunk i is a noisy copy of passage p = i % P, copy number k = i // P. Its vector is
  normalize(base[p] + sigma * g_i), g_i a standard normal 384-vector: the noise of chunks
  500b .. 500b + 499 comes from one generator seeded (SEED, b), so any chunk can be made again
  alone and nothing ever holds more than a batch. Its text is the passage's sentences (the
  title first) rotated left by k % (number of sentences), then the tag "[copy k]".
- chunk i belongs to document "d{i // 10}" (chunk index i % 10, ten chunks a document), and a
  document to one of 1,000 tenants drawn with Zipf-skewed probability (tenant t, counted from
  0, with weight 1 / (t + 1)): the tenant of every chunk is one precomputed int16 array, the
  compact record from which exact search finds a tenant's chunks again.
- query q is a SciFact claim (none is a passage) embedded by the same model, with its text
  for hybrid search; at a checkpoint of n chunks its tenant is that of chunk floor(u_q * n),
  u_q a fixed uniform draw, so tenants are searched as often as they are large.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import resource
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

DIMENSIONS = 384
BATCH = 500
"""Chunks per write call, and per noise generator."""
TENANTS = 1_000
ZIPF_EXPONENT = 1.0
CHUNKS_PER_DOCUMENT = 10
TOP_K = 5
SEED = 20_240_611
SIGMA = 0.03
"""Noise per coordinate: a copy keeps cosine ~0.86 with its passage (unrelated SciFact
passages: ~0.12), two copies ~0.74."""
WARM_UP = 2
"""Untimed searches before each mode's timed ones."""
MARKER = "STORES "
"""Prefix of the JSON lines a driver prints for the case (anything else is the stores' noise)."""


def emit(event: dict[str, Any]) -> None:
    """One marked JSON line on stdout, flushed."""
    sys.stdout.write(MARKER + json.dumps(event) + "\n")
    sys.stdout.flush()


def sentence_text(sentences: Sequence[str], copy: int) -> str:
    """The text of copy `copy` of a passage of `sentences`."""
    shift = copy % len(sentences)
    return " ".join([*sentences[shift:], *sentences[:shift]]) + f" [copy {copy}]"


@dataclass(frozen=True)
class Batch:
    """Chunks `start` .. `start + len(ids) - 1` as every system writes them."""

    ids: np.ndarray
    """Chunk numbers, int64."""
    vectors: np.ndarray
    """Unit vectors, float32, one row per chunk."""
    texts: list[str]
    tenants: list[str]
    documents: list[str]
    chunk_indexes: list[int]

    def __len__(self) -> int:
        return len(self.texts)


class StoreData:
    """Every chunk of a run of up to `max_chunks` (and `extra` more, for the concurrent
    window's writer), made on demand from the cached corpus files (`passages.npy`,
    `queries.npy`, `texts.json`, written by `bench_stores.py`)."""

    def __init__(
        self,
        passages_npy: str | Path,
        queries_npy: str | Path,
        texts_json: str | Path,
        max_chunks: int,
        sigma: float = SIGMA,
        extra: int = 0,
    ) -> None:
        self.base = np.load(passages_npy).astype(np.float32)
        self.query_vectors = np.load(queries_npy).astype(np.float32)
        texts = json.loads(Path(texts_json).read_text(encoding="utf-8"))
        self.sentences: list[list[str]] = texts["sentences"]
        self.query_texts: list[str] = texts["query_texts"]
        if len(self.sentences) != len(self.base) or len(self.query_texts) != len(
            self.query_vectors
        ):
            raise ValueError("the cached corpus files do not belong together")
        self.measured = max_chunks
        self.max_chunks = max_chunks + extra
        self.sigma = float(sigma)
        self.tenants = chunk_tenants(self.max_chunks)

    @property
    def passages(self) -> int:
        return len(self.base)

    def vectors(self, start: int, count: int) -> np.ndarray:
        """The vectors of chunks `start` .. `start + count - 1` (float32, unit length)."""
        out = np.empty((count, DIMENSIONS), dtype=np.float32)
        position = start
        while position < start + count:
            block = position // BATCH
            first = block * BATCH
            noise = np.random.default_rng([SEED, block]).standard_normal(
                (BATCH, DIMENSIONS), dtype=np.float32
            )
            upto = min(first + BATCH, start + count)
            ids = np.arange(position, upto)
            rows = self.base[ids % self.passages] + np.float32(self.sigma) * noise[ids - first]
            rows /= np.linalg.norm(rows, axis=1, keepdims=True)
            out[position - start : upto - start] = rows
            position = upto
        return out

    def text(self, chunk: int) -> str:
        return sentence_text(self.sentences[chunk % self.passages], chunk // self.passages)

    def batch(self, start: int, count: int) -> Batch:
        if start + count > self.max_chunks:
            raise ValueError(f"chunks up to {start + count} asked, the run has {self.max_chunks}")
        ids = np.arange(start, start + count, dtype=np.int64)
        return Batch(
            ids=ids,
            vectors=self.vectors(start, count),
            texts=[self.text(int(i)) for i in ids],
            tenants=[f"t{t}" for t in self.tenants[start : start + count].tolist()],
            documents=[f"d{i // CHUNKS_PER_DOCUMENT}" for i in ids.tolist()],
            chunk_indexes=[i % CHUNKS_PER_DOCUMENT for i in ids.tolist()],
        )

    def query_tenants(self, written: int) -> np.ndarray:
        """Each query's tenant once `written` chunks are in: the tenant of a chunk drawn
        uniformly from those (so as skewed as the tenants' sizes), the same for every system."""
        u = np.random.default_rng([SEED, 2]).random(len(self.query_vectors))
        return self.tenants[np.minimum((u * written).astype(np.int64), written - 1)]

    def query_tenant_sizes(self, written: int) -> list[int]:
        """The chunks each query's tenant holds once `written` chunks are in."""
        sizes = np.bincount(self.tenants[:written].astype(np.int64), minlength=TENANTS)
        return [int(sizes[t]) for t in self.query_tenants(written)]

    def fingerprint(self) -> str:
        """A digest of the corpus, the measured chunks' tenants and the first two batches: equal
        in every venv if and only if the systems get the same data."""
        digest = hashlib.sha256()
        digest.update(self.base.tobytes())
        digest.update(self.query_vectors.tobytes())
        digest.update(self.tenants[: self.measured].tobytes())
        for start in (0, BATCH):
            if start < self.measured:
                batch = self.batch(start, min(BATCH, self.measured - start))
                digest.update(batch.vectors.tobytes())
                digest.update("\n".join(batch.texts + batch.tenants).encode())
        return digest.hexdigest()[:16]

    def exact_top(self, written: int, k: int = TOP_K) -> list[list[int]]:
        """Exact top-`k` chunk numbers (cosine) of every query within its tenant, over the first
        `written` chunks: one pass regenerating the chunks batch by batch, numpy brute force."""
        queries = self.query_vectors
        tenants = self.query_tenants(written)
        best_score = np.full((len(queries), k), -np.inf, dtype=np.float32)
        best_id = np.full((len(queries), k), -1, dtype=np.int64)
        wanted = np.zeros(TENANTS, dtype=bool)
        wanted[tenants] = True
        for start in range(0, written, BATCH):
            count = min(BATCH, written - start)
            chunk_tenant = self.tenants[start : start + count]
            if not wanted[chunk_tenant].any():
                continue
            scores = queries @ self.vectors(start, count).T
            scores[tenants[:, None] != chunk_tenant[None, :]] = -np.inf
            ids = np.broadcast_to(np.arange(start, start + count), scores.shape)
            all_scores = np.concatenate([best_score, scores], axis=1)
            all_ids = np.concatenate([best_id, ids], axis=1)
            top = np.argpartition(-all_scores, k - 1, axis=1)[:, :k]
            best_score = np.take_along_axis(all_scores, top, axis=1)
            best_id = np.take_along_axis(all_ids, top, axis=1)
        return [
            [int(i) for i, s in zip(ids, scores, strict=True) if np.isfinite(s)]
            for ids, scores in zip(best_id, best_score, strict=True)
        ]


def chunk_tenants(max_chunks: int) -> np.ndarray:
    """The tenant of each of the first `max_chunks` chunks (int16), by document: a prefix of
    the same draw whatever `max_chunks` is, so a short run's chunks are a long run's first."""
    weights = 1.0 / np.arange(1, TENANTS + 1) ** ZIPF_EXPONENT
    cdf = np.cumsum(weights) / weights.sum()
    documents = math.ceil(max_chunks / CHUNKS_PER_DOCUMENT)
    u = np.random.default_rng([SEED, 1]).random(documents)
    per_document = np.minimum(np.searchsorted(cdf, u, side="right"), TENANTS - 1)
    return np.repeat(per_document.astype(np.int16), CHUNKS_PER_DOCUMENT)[:max_chunks]


def recall(hits: Sequence[Sequence[int]], exact: Sequence[Sequence[int]]) -> float | None:
    """Mean share of each query's exact top-k that the system found (k capped by what its
    tenant holds)."""
    shares = [
        len(set(found) & set(truth)) / len(truth)
        for found, truth in zip(hits, exact, strict=True)
        if truth
    ]
    return round(statistics.fmean(shares), 4) if shares else None


SIZE_CLASSES = (("small", 1_000), ("medium", 10_000), ("large", math.inf))
"""Tenant size classes by the chunks a tenant holds at a checkpoint: below 1,000, below
10,000, and the rest."""


def recall_by_size(
    hits: Sequence[Sequence[int]], exact: Sequence[Sequence[int]], sizes: Sequence[int]
) -> dict[str, float | None]:
    """`recall` within each size class, `sizes` being each query's tenant's chunk count."""
    out: dict[str, float | None] = {}
    floor = 0.0
    for name, below in SIZE_CLASSES:
        picked = [i for i, size in enumerate(sizes) if floor <= size < below]
        out[name] = recall([hits[i] for i in picked], [exact[i] for i in picked])
        floor = below
    return out


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def status_mb(pid: int | str, field: str) -> float:
    """A memory line of /proc/PID/status (VmRSS, VmHWM, ...), in MiB; 0 if gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def pss_mb(pid: int | str) -> float:
    """Proportional set size of process `pid` (shared pages split among their users), MiB."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def process_tree(root: int) -> list[int]:
    """`root` and every process descended from it (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, frontier = [root], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        tree += children
        frontier = children
    return tree


def disk_mb(path: Path) -> float:
    """Space allocated to the files below `path` (as `du` counts it), in MiB."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                continue
    return round(total / 2**20, 1)


class StoreDriver(Protocol):
    """One system under test, driven through its public API."""

    modes: tuple[str, ...]
    """Search modes measured: "dense", and "hybrid" where the system has it."""

    def info(self) -> dict[str, Any]: ...

    async def open(self) -> None: ...

    async def write(self, batch: Batch) -> None: ...

    async def optimize(self) -> dict[str, float]:
        """Build indexes / optimize (where the API has it); extra timings to report."""
        ...

    async def search(self, vector: np.ndarray, text: str, tenant: str, mode: str) -> list[int]:
        """Top-5 chunk numbers within `tenant`."""
        ...

    async def disk_mb(self) -> float: ...

    async def memory(self) -> dict[str, Any]:
        """Memory beyond this process's (e.g. a database server's), in MiB."""
        ...

    async def close(self) -> None: ...


async def measure(
    driver: StoreDriver,
    data: StoreData,
    steps: Sequence[int],
    seconds: float,
    concurrent_seconds: float = 0.0,
) -> None:
    """Write `data` through `driver` in batches of 500 up to each of `steps`, and at each step
    optimize, measure and search; one JSON line per checkpoint. Stops (saying how far it got)
    once `seconds` have passed since it started. After the last step, when `concurrent_seconds`
    and the bound allow, the window under concurrent load (`stores_concurrent`)."""
    deadline = time.monotonic() + seconds
    emit({"event": "start", "fingerprint": data.fingerprint(), "info": driver.info()})
    written, last_checkpoint = 0, 0

    def stopped(where: str) -> None:
        if concurrent_seconds:
            emit({"event": "concurrent", "skipped": "the bound was reached"})
        emit(
            {
                "event": "stopped",
                "reason": f"{seconds:.0f} s bound reached {where}",
                "written": written,
                "last_checkpoint": last_checkpoint,
            }
        )

    try:
        await driver.open()
        emit({"event": "opened", "info": driver.info()})
        for target in steps:
            step_start, write_s = written, 0.0
            while written < target:
                if time.monotonic() > deadline:
                    return stopped(f"while writing towards {target:,}")
                batch = data.batch(written, min(BATCH, target - written))
                started = time.perf_counter()
                await driver.write(batch)
                write_s += time.perf_counter() - started
                written += len(batch)
                emit({"event": "progress", "written": written})
            started = time.perf_counter()
            timings = await driver.optimize()
            optimize_s = time.perf_counter() - started
            new = written - step_start
            row: dict[str, Any] = {
                "event": "checkpoint",
                "chunks": written,
                "new_chunks": new,
                "write_s": round(write_s, 2),
                "optimize_s": round(optimize_s, 2),
                **{key: round(value, 2) for key, value in timings.items()},
                "insert_per_s": round(new / max(write_s + optimize_s, 1e-9)),
                "disk_mb": await driver.disk_mb(),
                "search": {},
            }
            tenants = data.query_tenants(written)
            for mode in driver.modes:
                times: list[float] = []
                hits: list[list[int]] = []
                for q in range(WARM_UP):
                    await driver.search(
                        data.query_vectors[q], data.query_texts[q], f"t{tenants[q]}", mode
                    )
                for q, vector in enumerate(data.query_vectors):
                    if time.monotonic() > deadline:
                        break
                    started = time.perf_counter()
                    found = await driver.search(vector, data.query_texts[q], f"t{tenants[q]}", mode)
                    times.append(1000 * (time.perf_counter() - started))
                    hits.append(found)
                # The same searches again: what pages and caches the first pass left warm.
                warm: list[float] = []
                for q, vector in enumerate(data.query_vectors[: len(times)]):
                    if time.monotonic() > deadline:
                        break
                    started = time.perf_counter()
                    await driver.search(vector, data.query_texts[q], f"t{tenants[q]}", mode)
                    warm.append(1000 * (time.perf_counter() - started))
                if times:
                    row["search"][mode] = {
                        "p50_ms": round(statistics.median(times), 3),
                        "p99_ms": round(percentile(times, 0.99), 3),
                        "queries": len(times),
                    }
                if warm:
                    row["search"][mode]["warm_p50_ms"] = round(statistics.median(warm), 3)
                    row["search"][mode]["warm_p99_ms"] = round(percentile(warm, 0.99), 3)
                if mode == "dense":
                    row["dense_hits"] = hits
                if len(times) < len(data.query_vectors):
                    # What was measured is reported, marked, and the run ends there.
                    row["incomplete"] = f"bound reached after {len(times)} {mode} searches"
                    break
            row["peak_rss_mb"] = peak_rss_mb()
            row.update(await driver.memory())
            if "incomplete" in row:
                emit(row)
                return stopped(f"while searching at {written:,}")
            last_checkpoint = written
            emit(row)
        if concurrent_seconds:
            emit(
                {
                    "event": "concurrent",
                    **await concurrent(driver, data, written, concurrent_seconds, deadline),
                }
            )
        emit({"event": "done", "written": written, "last_checkpoint": last_checkpoint})
    finally:
        await driver.close()


async def concurrent(
    driver: StoreDriver, data: StoreData, written: int, seconds: float, deadline: float
) -> dict[str, Any]:
    """The concurrent window at `written` chunks, or why it was skipped (it must end, with
    the driver closed, within the bound)."""
    from stores_concurrent import window

    left = deadline - time.monotonic()
    if left < seconds + 10:
        return {"skipped": f"the bound leaves {max(left, 0):.0f} s, too few for {seconds:.0f} s"}
    return await window(driver, data, written, seconds)


def install_sigterm() -> None:
    """SIGTERM (the case's wall-time bound) unwinds the driver, so its `finally` blocks close
    the store and stop any server it started."""
    import signal

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def driver_main(drivers: dict[str, Any], argv: list[str]) -> None:
    """`python DRIVER.py SYSTEM PARAMS_JSON`: run `measure` for the system named."""
    import asyncio

    from stores_concurrent import HEADROOM

    system, params = argv[0], json.loads(argv[1])
    install_sigterm()
    concurrent_seconds = float(params.get("concurrent_seconds", 0))
    data = StoreData(
        params["passages_npy"],
        params["queries_npy"],
        params["texts_json"],
        max(params["steps"]),
        params["sigma"],
        extra=HEADROOM if concurrent_seconds else 0,
    )
    root = Path(params["workdir"])
    root.mkdir(parents=True, exist_ok=True)
    driver = drivers[system](root)
    asyncio.run(measure(driver, data, params["steps"], params["seconds"], concurrent_seconds))
