"""How long requests wait behind the store while a single-machine service ingests.

One service (SQLite, Qdrant Edge on disk) with a numpy bag-of-words embedding, so the
store, not the model, sets the ingest's pace: tenant A uploads documents totalling
`--chunks` chunks into one knowledge base while a client asks `/healthz` every 10 ms, and
tenant B (a small knowledge base of its own) and tenant A (the one being written) each
search every 0.1 s. Qdrant Edge indexes a segment each time 20,000 points fill one, holding
its process's GIL for seconds. Two arrangements run in turn, each in a fresh home:
`process` (the service's: the store in a child process) and `inline` (the store in the
service's own process). First, what the hop to the child costs: the median of a
tenant-filtered hybrid search of one store, in this process and through a child, in turns.

    python -m benchmarks store_pauses --chunks 100000
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from _common import ROOT, SCIFACT, write_result
from service_helpers import free_port

from archivist.embedding.base import BatchItem
from archivist.service import ServiceSettings
from archivist.service.storage.database import make_engine
from archivist.service.storage.keys import create_key
from archivist.testing.embedding import HashEmbeddingModel

CHUNK_TOKENS = 64
DOCUMENT_CHUNKS = 500
ARRANGEMENTS = ("process", "inline")


class ProjectedHashModel(HashEmbeddingModel):
    """Bag-of-words vectors in numpy: each token adds a fixed random row (tens of µs a
    chunk), so texts that share words are alike, as a real model's are."""

    ROWS = np.random.default_rng(0).standard_normal((1 << 14, 384)).astype(np.float32)

    def vector(self, item: BatchItem) -> list[float]:
        if not isinstance(item, str):
            return super().vector(item)
        tokens = self.tokens(item)
        rows = np.fromiter((zlib.crc32(token.encode()) & 0x3FFF for token in tokens), np.int64)
        summed = self.ROWS[rows, : self.dimensions].sum(axis=0)
        return (summed / (np.linalg.norm(summed) or 1.0)).tolist()


def serve(home: Path, port: int, arrangement: str) -> None:
    """Run the service over `home` on `port` with the store arranged as asked (the server
    side of this benchmark, in its own process)."""
    import asyncio

    import uvicorn

    from archivist._util.thread_priority import answer_sooner
    from archivist.rag import QdrantStore
    from archivist.service import runtime
    from archivist.service.app import create_app
    from archivist.service.guards.slow_clients import uvicorn_options

    settings = ServiceSettings(home=home, chunk_size=CHUNK_TOKENS, overlap=0)
    if arrangement == "inline":  # the service's own process owns the shards

        def inline(settings: ServiceSettings) -> QdrantStore:
            return QdrantStore(
                path=settings.service_dir / "qdrant",
                max_open_collections=settings.open_collections,
            )

        setattr(runtime, "open_store", inline)  # noqa: B010
    app = create_app(settings, embedding_model=ProjectedHashModel(dimensions=384))
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", **uvicorn_options(settings)
    )
    answer_sooner()
    asyncio.run(uvicorn.Server(config).serve())


def abstracts() -> Iterator[str]:
    """SciFact abstracts when present, else generated sentences, for ever."""
    path = SCIFACT / "corpus.jsonl.gz"
    if path.exists():
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            texts = [json.loads(line)["text"] for line in lines]
    else:
        texts = [
            " ".join(f"term{(n * 7919 + k) % 5003} record {n}" for k in range(120))
            for n in range(2000)
        ]
    for round_ in itertools.count():
        for text in texts:
            yield f"{text} (copy {round_})"


def documents(chunks: int) -> list[bytes]:
    """Documents of about DOCUMENT_CHUNKS chunks each, `chunks` in all."""
    source = abstracts()
    words_per_document = DOCUMENT_CHUNKS * CHUNK_TOKENS * 3 // 8  # the tokenizer splits words
    made: list[bytes] = []
    for _ in range(max(1, chunks // DOCUMENT_CHUNKS)):
        words: list[str] = []
        while len(words) < words_per_document:
            words.extend(next(source).split())
        made.append(" ".join(words).encode())
    return made


class Probes:
    """`/healthz` every 10 ms and a search by each tenant every 0.1 s, on their own threads."""

    def __init__(self, url: str, keys: dict[str, str]) -> None:
        self.samples: dict[str, list[tuple[float, float]]] = {"healthz": [], "a": [], "b": []}
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._health, args=(url,), daemon=True),
            *(
                threading.Thread(target=self._search, args=(url, who, keys[who]), daemon=True)
                for who in ("a", "b")
            ),
        ]

    def __enter__(self) -> Probes:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _health(self, url: str) -> None:
        with httpx.Client(base_url=url, timeout=120) as http:
            while not self._stop.is_set():
                started = time.monotonic()
                http.get("/healthz").raise_for_status()
                self.samples["healthz"].append((started, time.monotonic() - started))
                time.sleep(0.01)

    def _search(self, url: str, who: str, key: str) -> None:
        headers = {"Authorization": f"Bearer {key}"}
        numbers = itertools.count()
        with httpx.Client(base_url=url, headers=headers, timeout=120) as http:
            while not self._stop.is_set():
                query = f"cells of patients {next(numbers)}"  # new: the query cache would answer
                started = time.monotonic()
                http.post(
                    f"/v1/knowledge-bases/{who}/search", json={"query": query}
                ).raise_for_status()
                self.samples[who].append((started, time.monotonic() - started))
                time.sleep(0.1)


def figures(samples: list[tuple[float, float]], start: float, end: float) -> dict[str, float]:
    """p50, p99 and max in ms of the samples started within [start, end)."""
    values = sorted(latency for when, latency in samples if start <= when < end)
    if not values:
        return {"n": 0}
    ms = 1000
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(values) * ms, 1),
        "p99_ms": round(values[min(len(values) - 1, int(0.99 * len(values)))] * ms, 1),
        "max_ms": round(values[-1] * ms, 1),
        "over_250ms": sum(value > 0.25 for value in values),
    }


def run(arrangement: str, chunks: int, idle_seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-pauses-") as tmp:
        home = Path(tmp)
        engine = make_engine(ServiceSettings(home=home).resolved_database_url)
        keys = {who: create_key(engine, f"tenant-{who}").key for who in ("a", "b")}
        engine.dispose()
        port = free_port()
        log = (home / "serve.log").open("wb")
        serve = ["store_pauses", "--serve", str(home), str(port), arrangement]
        server = subprocess.Popen(
            [sys.executable, "-m", "benchmarks", *serve],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ARCHIVIST_HOME": str(home)},
        )
        url = f"http://127.0.0.1:{port}"
        try:
            return _measure(url, keys, chunks, idle_seconds, server)
        finally:
            server.terminate()
            server.wait(120)
            log.close()


def _measure(
    url: str,
    keys: dict[str, str],
    chunks: int,
    idle_seconds: float,
    server: subprocess.Popen[bytes],
) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        if server.poll() is not None:
            raise RuntimeError("the benchmark's server exited")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.1)
    clients = {
        who: httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=300)
        for who, key in keys.items()
    }
    for who, http in clients.items():
        http.post("/v1/knowledge-bases", json={"name": who}).raise_for_status()
    probe_doc = " ".join(next(abstracts()) for _ in range(3)).encode()
    upload(clients["b"], "b", [probe_doc])
    upload(clients["a"], "a", [probe_doc])
    files = documents(chunks)
    with Probes(url, keys) as probes:
        idle_start = time.monotonic()
        time.sleep(idle_seconds)
        ingest_start = time.monotonic()
        written = upload(clients["a"], "a", files)
        ingest_end = time.monotonic()
    return {
        "chunks": written,
        "ingest_seconds": round(ingest_end - ingest_start, 1),
        "chunks_per_second": round(written / (ingest_end - ingest_start)),
        **{
            f"{name}_idle": figures(samples, idle_start, ingest_start)
            for name, samples in probes.samples.items()
        },
        **{
            f"{name}_ingest": figures(samples, ingest_start, ingest_end)
            for name, samples in probes.samples.items()
        },
    }


def upload(http: httpx.Client, kb: str, files: list[bytes]) -> int:
    """Upload `files` to `kb` a few at a time; wait until all are ready; their chunk count."""
    ids: list[str] = []
    for start in range(0, len(files), 10):
        batch = files[start : start + 10]
        response = http.post(
            f"/v1/knowledge-bases/{kb}/documents",
            files=[("files", (f"doc-{start + n}.txt", data)) for n, data in enumerate(batch)],
        )
        response.raise_for_status()
        ids.extend(item["id"] for item in response.json()["items"])
    total = 0
    for doc in ids:
        while True:
            body = http.get(f"/v1/knowledge-bases/{kb}/documents/{doc}").json()
            if body["status"] == "failed":
                raise RuntimeError(f"document {doc} failed: {body.get('error')}")
            if body["status"] == "ready":
                total += int(body["chunk_count"])
                break
            time.sleep(0.2)
    return total


async def _round_trip(rounds: int = 3, searches: int = 300) -> dict[str, float]:
    """Median ms of a tenant-filtered hybrid `search` on the same 2,000 chunks, the store in
    this process and in a child, alternating `rounds` times: what the process hop costs."""

    from archivist.rag import QdrantStore
    from archivist.rag.store.process import ProcessStore
    from archivist.testing.store import record

    rng = np.random.default_rng(0)
    records = [
        record(
            f"d{n}",
            0,
            (rng.standard_normal(384) / 20).tolist(),
            text=f"invoice {n} is paid within {n % 60} days",
            tenant=f"t{n % 10}",
        )
        for n in range(2000)
    ]
    queries = [rng.standard_normal(384).tolist() for _ in range(searches)]
    timings: dict[str, list[float]] = {"inline": [], "process": []}
    with tempfile.TemporaryDirectory() as folder:
        async with QdrantStore(path=folder) as store:
            await store.create_collection("c", 384)
            for start in range(0, len(records), 500):
                await store.insert("c", records[start : start + 500])
        for _ in range(rounds):
            for arrangement, opened in (
                ("inline", QdrantStore(path=folder)),
                ("process", ProcessStore.of(QdrantStore, path=folder)),
            ):
                async with opened as store:
                    for query in queries:
                        started = time.perf_counter()
                        await store.search(
                            "c",
                            query,
                            top_k=5,
                            metadata_filter={"tenant": "t3"},
                            query_text="invoice paid",
                            mode="hybrid",
                        )
                        timings[arrangement].append(time.perf_counter() - started)
    return {name: round(statistics.median(values) * 1000, 2) for name, values in timings.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--arrangements", nargs="+", choices=ARRANGEMENTS, default=ARRANGEMENTS)
    parser.add_argument(
        "--serve", nargs=3, metavar=("HOME", "PORT", "ARRANGEMENT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.serve:
        serve(Path(args.serve[0]), int(args.serve[1]), args.serve[2])
        return
    import asyncio

    round_trip = asyncio.run(_round_trip())
    print("search p50 ms", round_trip, flush=True)
    runs = {}
    for arrangement in args.arrangements:
        runs[arrangement] = run(arrangement, args.chunks, args.idle_seconds)
        print(arrangement, json.dumps(runs[arrangement], indent=1), flush=True)
    path = write_result(
        "store_pauses",
        {
            "chunks_asked": args.chunks,
            "search_p50_ms": round_trip,
            "runs": runs,
            "load_avg": os.getloadavg(),
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
