"""Query-side speed of the default model: session settings, memory price, KnowledgeBase.search.

    .venv/bin/python -m benchmarks query_speed embed  # settings side by side
    .venv/bin/python -m benchmarks query_speed rss    # memory, one process per setting
    .venv/bin/python -m benchmarks query_speed kb     # search on 10k chunks vs embedding
    .venv/bin/python -m benchmarks query_speed plan   # a run's fixed cost; batch plans

SciFact queries (`../shared/datasets/scifact` or `$SCIFACT_DIR`; skipped cleanly where absent).
Every timing comparison runs all settings in one process, alternating query by query, so
machine noise hits them alike. Writes benchmarks/results/query_speed-<name>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from _common import ROOT, SCIFACT, write_result

# name -> LocalEmbeddingModel overrides; "default" is what LocalEmbeddingModel() does.
SETTINGS: dict[str, dict[str, Any]] = {
    "default": {},
    "no spinning": {"allow_spinning": False},
    "query folded, 1 thread": {"query_threads": 1},
    "all folded, 1 thread": {"fold_constants": True, "threads": 1},
    "all unfolded, every core": {
        "fold_constants": False,
        "query_fold_constants": False,
        "query_threads": len(os.sched_getaffinity(0)),
    },
}


def queries() -> list[str]:
    """SciFact's test queries (or the first 300 lines of its query file)."""
    path = SCIFACT / "queries.jsonl"
    if not path.is_file():
        print(f"skipped: {path} is absent", file=sys.stderr)
        raise SystemExit(0)
    with path.open() as handle:
        return [json.loads(line)["text"] for line in handle][:300]


def _rss_mib() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def bench_embed(rounds: int, batch_rounds: int) -> dict[str, Any]:
    """p50 of one query at a time, and queries/s in batches of 64, per setting."""
    from archivist.embedding import LocalEmbeddingModel

    texts = queries()
    models = {name: LocalEmbeddingModel(**overrides) for name, overrides in SETTINGS.items()}
    for model in models.values():
        await model(texts[:64], input_type="query")
    single: dict[str, list[float]] = {name: [] for name in models}
    for i in range(rounds):
        for name, model in models.items():
            tick = time.perf_counter()
            await model([texts[i % len(texts)]], input_type="query")
            single[name].append(1000 * (time.perf_counter() - tick))
    batched: dict[str, float] = dict.fromkeys(models, 0.0)
    for i in range(batch_rounds):
        batch = [texts[(i * 64 + j) % len(texts)] for j in range(64)]
        for name, model in models.items():
            tick = time.perf_counter()
            await model(batch, input_type="query")
            batched[name] += time.perf_counter() - tick
    p50 = {name: statistics.median(values) for name, values in single.items()}
    fastest = min(p50.values())
    return {
        "rounds": rounds,
        "single_p50_ms": {name: round(v, 2) for name, v in p50.items()},
        "single_p90_ms": {
            name: round(statistics.quantiles(v, n=10)[8], 2) for name, v in single.items()
        },
        "single_p50_over_fastest": {name: round(v / fastest, 2) for name, v in p50.items()},
        "batch64_queries_per_s": {
            name: round(64 * batch_rounds / seconds, 1) for name, seconds in batched.items()
        },
        "load_avg": os.getloadavg(),
    }


def rss_one(name: str, documents: bool) -> dict[str, Any]:
    """In this process: RSS after embedding queries (and, if asked, document batches)."""
    from archivist.embedding import LocalEmbeddingModel

    texts = queries()
    base = _rss_mib()
    model = LocalEmbeddingModel(**SETTINGS[name])
    asyncio.run(model(texts[:64], input_type="query"))
    after_queries = _rss_mib()
    if documents:
        passages = [" ".join(texts[i : i + 12]) for i in range(0, 240, 12)]
        asyncio.run(model(passages, input_type="document"))
    return {
        "setting": name,
        "imports_mib": round(base, 1),
        "after_queries_mib": round(after_queries, 1),
        "after_documents_mib": round(_rss_mib(), 1) if documents else None,
        "peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def bench_rss() -> dict[str, Any]:
    """Each setting in a fresh process: queries only, then queries and documents."""
    rows = []
    for name in SETTINGS:
        for documents in (False, True):
            command = [sys.executable, "-m", "benchmarks", "query_speed", "rss-one", name]
            if documents:
                command.append("--documents")
            out = subprocess.run(
                command, check=True, capture_output=True, text=True, cwd=ROOT
            ).stdout
            rows.append(json.loads(out))
    return {"rows": rows}


@contextlib.contextmanager
def engine_timings() -> Iterator[tuple[dict[str, list[float]], Callable[[], None]]]:
    """Milliseconds the Edge engine spent in each search's queries (one list, a batch, the
    payloads read) and in its term lookups, summed per search, by name."""
    from archivist.rag.store.qdrant.edge.backend import EdgeBackend

    timings: dict[str, list[float]] = {"engine_query": [], "engine_term_lookup": []}
    names = {
        "search": "engine_query",
        "search_batch": "engine_query",
        "retrieve": "engine_query",
        "term_idf": "engine_term_lookup",
    }
    originals = {method: getattr(EdgeBackend, method) for method in names}
    spent: dict[str, float] = dict.fromkeys(timings, 0.0)

    def timed(method: Any, name: str) -> Any:
        async def wrapper(self: Any, *args: Any) -> Any:
            tick = time.perf_counter()
            result = await method(self, *args)
            spent[name] += 1000 * (time.perf_counter() - tick)
            return result

        return wrapper

    def close_search() -> None:
        """Ends one search's sums (called after each search)."""
        for name in timings:
            timings[name].append(spent[name])
            spent[name] = 0.0

    for method, name in names.items():
        setattr(EdgeBackend, method, timed(originals[method], name))
    try:
        yield timings, close_search
    finally:
        for method, original in originals.items():
            setattr(EdgeBackend, method, original)


async def bench_kb(points: int, rounds: int) -> dict[str, Any]:
    """`KnowledgeBase.search` (embed + hybrid, Qdrant Edge) vs the query embedding alone."""
    from archivist.embedding import LocalEmbeddingModel
    from archivist.message import TextBlock
    from archivist.rag import KnowledgeBase
    from archivist.rag.document import Chunk
    from archivist.rag.record import VectorRecord
    from archivist.rag.store.qdrant import QdrantStore

    texts = queries()
    model = LocalEmbeddingModel()
    rng = np.random.default_rng(0)
    words = " ".join(texts).split()
    with tempfile.TemporaryDirectory() as directory:
        async with QdrantStore(path=directory) as store:
            kb = KnowledgeBase("bench", "", model, store, "bench")
            await kb.ensure_collection()
            for start in range(0, points, 1_000):
                vectors = rng.standard_normal((1_000, 384)).astype(np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                records = [
                    VectorRecord(
                        vector=vectors[i].tolist(),
                        document_id=f"d{(start + i) // 10}",
                        chunk=Chunk(
                            content=TextBlock(
                                text=" ".join(
                                    words[j % len(words)] for j in rng.integers(0, len(words), 120)
                                )
                            ),
                            source="bench",
                            chunk_index=(start + i) % 10,
                            total_chunks=10,
                        ),
                    )
                    for i in range(1_000)
                ]
                await store.insert("bench", records)
            await kb.search(texts[0])  # warm: model, collection, modes
            search: list[float] = []
            embed: list[float] = []
            with engine_timings() as (engine, close_search):
                for i in range(rounds):
                    query = texts[i % len(texts)]
                    tick = time.perf_counter()
                    await model([query], input_type="query")
                    embed.append(1000 * (time.perf_counter() - tick))
                    tick = time.perf_counter()
                    await kb.search(query)
                    search.append(1000 * (time.perf_counter() - tick))
                    close_search()
    p50_embed, p50_search = statistics.median(embed), statistics.median(search)
    return {
        "points": points,
        "rounds": rounds,
        "embed_p50_ms": round(p50_embed, 2),
        "search_p50_ms": round(p50_search, 2),
        "search_over_embed": round(p50_search / p50_embed, 2),
        # Within each search: the engine's queries (results converted) and its lookup of the
        # query terms' IDF, both after the embedding, since the queries need its vector.
        **{f"{name}_p50_ms": round(statistics.median(times), 2) for name, times in engine.items()},
        "load_avg": os.getloadavg(),
    }


def bench_plan(samples: int) -> dict[str, Any]:
    """What a run of the query session costs beyond its padded tokens, and what cutting
    batches of SciFact queries by `plan_by_length` saves against one run per batch."""
    import random

    from archivist.embedding import LocalEmbeddingModel
    from archivist.embedding.onnx import RUN_COST_TOKENS, plan_by_length

    texts = queries()
    model: Any = LocalEmbeddingModel()
    asyncio.run(model(texts[:64], input_type="query"))  # builds the query session
    runtime = model._load_query(64)
    session = runtime.session
    inputs = {node.name for node in session.get_inputs()}

    def cpu_ms(batch: int, width: int, repeats: int = 9) -> float:
        feed = {
            "input_ids": np.full((batch, width), 2000, dtype=np.int64),
            "attention_mask": np.ones((batch, width), dtype=np.int64),
            "token_type_ids": np.zeros((batch, width), dtype=np.int64),
        }
        feed = {name: array for name, array in feed.items() if name in inputs}
        times = []
        for _ in range(repeats):
            tick = time.process_time()
            session.run(None, feed)
            times.append(1000 * (time.process_time() - tick))
        return statistics.median(times)

    # CPU time of runs of every shape, fitted as a + b * padded tokens: a / b is what one
    # more run costs in tokens.
    shapes = [(batch, width) for batch in (1, 4, 8, 16, 32) for width in (12, 24, 48)]
    tokens = np.array([batch * width for batch, width in shapes], dtype=float)
    spent = np.array([cpu_ms(batch, width) for batch, width in shapes])
    per_token, per_run = np.polyfit(tokens, spent, 1)
    encodings = runtime.tokenizer.encode_batch(texts)
    rng = random.Random(0)
    rows = []
    for size in (8, 20, 64):
        drawn = [rng.sample(range(len(texts)), size) for _ in range(samples)]
        ways = {
            "one run per batch": lambda lengths: [list(range(len(lengths)))],
            "plan_by_length": lambda lengths: plan_by_length(
                lengths, model.batch_size, model.token_budget
            ),
        }
        # Alternating, so machine noise hits both alike.
        cpu = dict.fromkeys(ways, 0.0)
        padded = dict.fromkeys(ways, 0)
        for picked in drawn:
            batch = [encodings[i] for i in picked]
            lengths = [len(e.ids) for e in batch]
            for name, plan_of in ways.items():
                plan = plan_of(lengths)
                padded[name] += sum(len(p) * max(lengths[i] for i in p) for p in plan)
                tick = time.process_time()
                for part in plan:
                    model._run(runtime, [batch[i] for i in part])
                cpu[name] += time.process_time() - tick
        for name in ways:
            rows.append(
                {
                    "queries": size,
                    "plan": name,
                    "cpu_ms_per_query": round(1000 * cpu[name] / (size * samples), 2),
                    "padded_tokens_per_query": round(padded[name] / (size * samples), 1),
                }
            )
    return {
        "run_cost_ms": round(float(per_run), 2),
        "token_cost_ms": round(float(per_token), 4),
        "run_cost_in_tokens": round(float(per_run / per_token), 1),
        "RUN_COST_TOKENS": RUN_COST_TOKENS,
        "batches": rows,
        "load_avg": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    embed = sub.add_parser("embed")
    embed.add_argument("--rounds", type=int, default=300)
    embed.add_argument("--batch-rounds", type=int, default=10)
    sub.add_parser("rss")
    one = sub.add_parser("rss-one")
    one.add_argument("name", choices=list(SETTINGS))
    one.add_argument("--documents", action="store_true")
    kb = sub.add_parser("kb")
    kb.add_argument("--points", type=int, default=10_000)
    kb.add_argument("--rounds", type=int, default=200)
    plan = sub.add_parser("plan")
    plan.add_argument("--samples", type=int, default=40)
    args = parser.parse_args(argv)
    if args.bench == "rss-one":
        print(json.dumps(rss_one(args.name, args.documents)))
        return
    if args.bench == "embed":
        result = asyncio.run(bench_embed(args.rounds, args.batch_rounds))
    elif args.bench == "rss":
        result = bench_rss()
    elif args.bench == "plan":
        result = bench_plan(args.samples)
    else:
        result = asyncio.run(bench_kb(args.points, args.rounds))
    write_result(f"query_speed-{args.bench}", result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
