"""Scale benchmark: does writing into QdrantStore (path=) cost the same at 20k, 100k and 1M chunks?

Writes clustered 384-d vectors (100 centres, like text embeddings) with SciFact sentences as chunk
text (synthetic words if ../shared/datasets/scifact is absent) into one collection on disk,
10 chunks per document, documents spread over 1,000 tenants by `tenant_id`, each written by
`replace_document` within its tenant as KnowledgeBase writes (`--writer insert`: one `insert`
call per 1,000 chunks, AgentScope's store call, with ids stable across re-inserts). Per step:
the write rate all-in over the step, all-in over each segment's worth of chunks (each such
window pays exactly one segment indexing, so small and large collections compare like for like;
the first step is one segment, not 10k, for that reason) and with the in-process indexing taken
out; the indexing time, `optimize()` at the end, RSS (now, peak, anonymous, file-backed), the
WAL and the store's size on disk, and tenant-filtered top-5 latency p50/p99 for dense, sparse and
hybrid search. Then the service path: single-file uploads into one knowledge base of a real
`archivist serve`, upload-to-ready of the first and the last 100.

    .venv/bin/python -m benchmarks scale                # 20k, 100k, 1M; 10,000 uploads
    .venv/bin/python -m benchmarks scale --steps 20000,100000 --uploads 300
    .venv/bin/python -m benchmarks scale --quantization none   # float32 in RAM
    .venv/bin/python -m benchmarks scale --writer insert       # one insert per batch

Writes benchmarks/results/NAME.json and NAME.png (`--name`, default scale).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from _common import RESULTS, SCIFACT, peak_rss_mb, write_result

from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.record import VectorRecord
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant.edge.collection import EdgeCollection
from archivist.rag.store.qdrant.edge.optimizer import SEGMENT_POINTS

DIMENSIONS = 384
TENANTS = 1_000
CHUNKS_PER_DOCUMENT = 10
BATCH = 1_000
QUERIES = 200
TOP_K = 5
COLLECTION = "scale"
WINDOW = SEGMENT_POINTS
"""Chunks per rate window: one segment's worth, so every window pays exactly one indexing."""


def sentences(dataset: Path = SCIFACT, limit: int = 200_000) -> list[str]:
    """SciFact corpus sentences (title and abstract split at full stops), or synthetic text."""
    corpus = dataset / "corpus.jsonl.gz"
    found: list[str] = []
    if corpus.exists():
        with gzip.open(corpus, "rt", encoding="utf-8") as lines:
            for line in lines:
                document = json.loads(line)
                text = f"{document.get('title', '')}. {document.get('text', '')}"
                found += [s.strip() for s in re.split(r"(?<=\.)\s+", text) if len(s.strip()) > 20]
                if len(found) >= limit:
                    break
    if not found:
        rng = random.Random(3)
        words = [f"w{n}" for n in range(5_000)]
        found = [" ".join(rng.choices(words, k=18)) for _ in range(20_000)]
    return found


class Vectors:
    """Clustered unit vectors made batch by batch (1M x 384 float32 would itself be 1.5 GB)."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.centres = self.rng.standard_normal((100, DIMENSIONS))

    def take(self, count: int) -> np.ndarray:
        picked = self.centres[self.rng.integers(0, 100, count)]
        vectors = picked + 0.35 * self.rng.standard_normal((count, DIMENSIONS))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors.astype(np.float32)


def batch_records(start: int, vectors: np.ndarray, texts: list[str]) -> list[VectorRecord]:
    """Chunks start.. of the corpus: chunk n is part n % 10 of document n // 10."""
    out = []
    for offset, vector in enumerate(vectors.tolist()):
        n = start + offset
        document = n // CHUNKS_PER_DOCUMENT
        out.append(
            VectorRecord(
                vector=vector,
                document_id=f"doc-{document}",
                chunk=Chunk(
                    content=TextBlock(text=texts[n % len(texts)]),
                    source=f"doc-{document}.txt",
                    chunk_index=n % CHUNKS_PER_DOCUMENT,
                    total_chunks=CHUNKS_PER_DOCUMENT,
                    metadata={"tenant_id": f"t{document % TENANTS}"},
                ),
            )
        )
    return out


class IndexClock:
    """Time spent in the engine's optimizer (segment indexing), in-process."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.runs = 0
        original = EdgeCollection.optimize
        clock = self

        def timed(collection: EdgeCollection) -> bool:
            started = time.perf_counter()
            did = original(collection)
            if did:
                clock.runs += 1
            clock.seconds += time.perf_counter() - started
            return did

        EdgeCollection.optimize = timed  # type: ignore[method-assign]


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident memory now (`RssAnon`: heap only, not file pages), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def disk_mb(path: Path, under: str | None = None) -> float:
    """Bytes in files below `path` (only inside directories named `under`, if given), in MiB."""
    return (
        sum(
            f.stat().st_size
            for f in path.rglob("*")
            if f.is_file() and (under is None or under in f.relative_to(path).parts[:-1])
        )
        / 2**20
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def latencies(
    store: QdrantStore, queries: np.ndarray, texts: list[str], mode: str
) -> dict[str, float]:
    rng = random.Random(11)
    times = []
    for vector in queries:
        text = " ".join(rng.choice(texts).split()[:6])
        tenant = {"tenant_id": f"t{rng.randrange(TENANTS)}"}
        started = time.perf_counter()
        await store.search(
            COLLECTION,
            None if mode == "sparse" else vector.tolist(),
            TOP_K,
            tenant,
            query_text=None if mode == "dense" else text,
            mode=mode,  # type: ignore[arg-type]
        )
        times.append(1000 * (time.perf_counter() - started))
    return {
        "p50_ms": round(statistics.median(times), 3),
        "p99_ms": round(percentile(times, 0.99), 3),
    }


async def write_batch(store: QdrantStore, writer: str, records: list[VectorRecord]) -> None:
    """Write `records` by `writer`: "replace", one `replace_document` per document within its
    tenant (what KnowledgeBase does), or "insert", one `insert` call for the batch."""
    if writer == "insert":
        await store.insert(COLLECTION, records)
        return
    for start in range(0, len(records), CHUNKS_PER_DOCUMENT):
        document = records[start : start + CHUNKS_PER_DOCUMENT]

        async def batches(document: list[VectorRecord] = document) -> AsyncIterator[list[Any]]:
            yield document

        tenant = {"tenant_id": document[0].chunk.metadata["tenant_id"]}
        await store.replace_document(COLLECTION, document[0].document_id, batches(), tenant)


async def store_steps(
    steps: list[int],
    quantization: str | None,
    texts: list[str],
    trace: list[tuple[int, int]],
    writer: str = "replace",
) -> list[dict[str, Any]]:
    """The per-step measurements; `trace` gets (chunks written, chunks/s) per window."""
    vectors = Vectors()
    queries = Vectors(seed=99).take(QUERIES)
    clock = IndexClock()
    root = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    results = []
    try:
        async with QdrantStore(path=root, quantization=quantization) as store:  # type: ignore[arg-type]
            await store.create_collection(COLLECTION, DIMENSIONS)
            written = 0
            for target in steps:
                index_before, runs_before = clock.seconds, clock.runs
                started = window_started = time.perf_counter()
                step_start = written
                windows: list[float] = []
                while written < target:
                    count = min(BATCH, target - written)
                    await write_batch(
                        store, writer, batch_records(written, vectors.take(count), texts)
                    )
                    written += count
                    if written % WINDOW == 0:
                        now = time.perf_counter()
                        windows.append(WINDOW / (now - window_started))
                        trace.append((written, round(windows[-1])))
                        window_started = now
                elapsed = time.perf_counter() - started
                indexing = clock.seconds - index_before
                optimize_started = time.perf_counter()
                await store.optimize(COLLECTION)
                optimize_seconds = time.perf_counter() - optimize_started
                new = written - step_start
                step = {
                    "chunks": written,
                    "new_chunks": new,
                    "insert_per_s": round(new / elapsed),
                    "last_window_insert_per_s": round(windows[-1]) if windows else None,
                    "median_window_insert_per_s": (
                        round(statistics.median(windows)) if windows else None
                    ),
                    "insert_per_s_without_indexing": round(new / max(elapsed - indexing, 1e-9)),
                    "segment_indexings": clock.runs - runs_before,
                    "indexing_s_during_inserts": round(indexing, 2),
                    "indexing_s_per_10k_new": round(10_000 * indexing / new, 2),
                    "optimize_s": round(optimize_seconds, 2),
                    "rss_mb": round(rss_mb()),
                    "rss_anon_mb": round(rss_mb("RssAnon")),
                    "rss_file_mb": round(rss_mb("RssFile")),
                    "wal_mb": round(disk_mb(root, "wal")),
                    "peak_rss_mb": round(peak_rss_mb()),
                    "disk_mb": round(disk_mb(root)),
                    "search": {
                        mode: await latencies(store, queries, texts, mode)
                        for mode in ("dense", "sparse", "hybrid")
                    },
                }
                results.append(step)
                print(json.dumps(step), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return results


def upload_texts(count: int, texts: list[str]) -> Iterator[str]:
    for n in range(count):
        yield " ".join(texts[(n * 7 + k) % len(texts)] for k in range(6))


def service_uploads(count: int, texts: list[str]) -> dict[str, Any]:
    """Upload `count` single files, one after another, each waited on until ready."""
    import httpx
    from service_helpers import ServeProcess, free_port

    from archivist.service import ServiceSettings
    from archivist.service.storage.database import make_engine
    from archivist.service.storage.keys import create_key

    home = Path(tempfile.mkdtemp(prefix="bench-scale-service-"))
    try:
        engine = make_engine(ServiceSettings(home=home).resolved_database_url)
        key = create_key(engine, "scale-tenant").key
        engine.dispose()
        # Upload-to-ready is measured, not the per-key rate limit the status polls would hit.
        server = ServeProcess(home, free_port(), "--rate", "1000000")
        server.start()
        seconds: list[float] = []
        try:
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=server.url, headers=headers, timeout=120) as http:
                http.post("/v1/knowledge-bases", json={"name": "kb"}).raise_for_status()
                for n, text in enumerate(upload_texts(count, texts)):
                    started = time.perf_counter()
                    files = [("files", (f"note-{n:05d}.txt", text.encode(), "text/plain"))]
                    response = http.post("/v1/knowledge-bases/kb/documents", files=files)
                    response.raise_for_status()
                    [document] = response.json()["items"]
                    while document["status"] not in ("ready", "failed"):
                        time.sleep(0.005)
                        document = http.get(f"/v1/knowledge-bases/kb/documents/{document['id']}")
                        document = document.raise_for_status().json()
                    if document["status"] != "ready":
                        raise RuntimeError(f"upload {n} failed: {document}")
                    seconds.append(time.perf_counter() - started)
                    if n % 100 == 99:
                        print(f"uploads: {n + 1}/{count}", flush=True)
        finally:
            server.stop()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    window = min(100, count // 2)
    first, last = seconds[:window], seconds[-window:]
    return {
        "uploads": count,
        "window": window,
        "first_median_ms": round(1000 * statistics.median(first), 1),
        "last_median_ms": round(1000 * statistics.median(last), 1),
        "first_mean_ms": round(1000 * statistics.fmean(first), 1),
        "last_mean_ms": round(1000 * statistics.fmean(last), 1),
        "last_over_first_median": round(statistics.median(last) / statistics.median(first), 2),
    }


def plot(steps: list[dict[str, Any]], trace: list[tuple[int, int]], path: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        print("no plot: matplotlib is not installed (pip install -e '.[bench]')", file=sys.stderr)
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chunks = [s["chunks"] for s in steps]
    figure, (rate, latency) = plt.subplots(1, 2, figsize=(11, 4))
    if trace:
        rate.plot(*zip(*trace, strict=True), ".", color="0.6", label="all-in, each segment")
    rate.plot(chunks, [s["insert_per_s"] for s in steps], "o-", label="all-in, whole step")
    rate.plot(
        chunks, [s["insert_per_s_without_indexing"] for s in steps], "s--", label="without indexing"
    )
    rate.set(xscale="log", xlabel="chunks in the collection", ylabel="chunks/s written")
    rate.set_ylim(bottom=0)
    rate.set_title("Insert rate")
    rate.legend()
    for mode, marker in (("dense", "o-"), ("sparse", "s-"), ("hybrid", "^-")):
        latency.plot(chunks, [s["search"][mode]["p99_ms"] for s in steps], marker, label=mode)
    latency.set(xscale="log", xlabel="chunks in the collection", ylabel="ms")
    latency.set_title("Tenant-filtered top-5, p99")
    latency.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="20000,100000,1000000")
    parser.add_argument("--quantization", choices=["int8", "none"], default="int8")
    parser.add_argument(
        "--writer",
        choices=["replace", "insert"],
        default="replace",
        help="replace_document per document (KnowledgeBase's path) or insert per 1,000 chunks",
    )
    parser.add_argument("--uploads", type=int, default=10_000, help="0 skips the service path")
    parser.add_argument("--name", default="scale", help="results/NAME.json")
    parser.add_argument("--dataset", type=Path, default=SCIFACT, help="SciFact (chunk texts)")
    args = parser.parse_args(argv)
    texts = sentences(args.dataset)
    steps = sorted(int(step) for step in args.steps.split(","))
    quantization = None if args.quantization == "none" else args.quantization
    payload: dict[str, Any] = {
        "quantization": args.quantization,
        "writer": args.writer,
        "tenants": TENANTS,
        "texts": "scifact" if (args.dataset / "corpus.jsonl.gz").exists() else "synthetic",
    }
    trace: list[tuple[int, int]] = []
    payload["steps"] = asyncio.run(store_steps(steps, quantization, texts, trace, args.writer))
    payload["window_insert_per_s"] = trace
    if args.uploads:
        payload["service"] = service_uploads(args.uploads, texts)
        print(json.dumps(payload["service"]), flush=True)
    print(write_result(args.name, payload))
    plot(payload["steps"], trace, RESULTS / f"{args.name}.png")


if __name__ == "__main__":
    main()
