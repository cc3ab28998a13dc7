"""Archivist's side of the benchmark suite (plus the BM25 and raw-embedder baselines).

Usage (from the repo's venv): `python archivist_driver.py TASK PARAMS_JSON` with TASK one of
quality | bm25 | raw_embed | ingest | latency | pdf. Prints one `SUITE-RESULT {json}` line.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _suite_data import (
    DIMENSIONS,
    INSERT_BATCH,
    TOP_K,
    document_of,
    emit,
    query_vectors,
    summary,
    tenant_of,
    timed_queries,
    vectors,
)

from archivist.embedding import EmbeddingModelBase, EmbeddingResponse, LocalEmbeddingModel
from archivist.embedding.base import BatchItem, InputType
from archivist.eval import (
    EvalConfig,
    chunk_documents,
    evaluate,
    load_beir,
    per_query,
    run_evaluation,
)
from archivist.message import TextBlock
from archivist.rag import ApproxTokenChunker, Chunk, KnowledgeBase, PDFParser, VectorRecord
from archivist.rag.knowledge.ingest import ingest_files
from archivist.rag.parser import default_registry
from archivist.rag.store.qdrant import QdrantStore


class LookupEmbedding(EmbeddingModelBase):
    """Returns a precomputed vector for query `q<i>`, so latency excludes the model."""

    def __init__(self, table: list[list[float]]) -> None:
        super().__init__(model="lookup", dimensions=DIMENSIONS, batch_size=64)
        self.table = table

    async def _embed_batch(
        self, batch: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        rows = [self.table[int(str(q)[1:]) % len(self.table)] for q in batch]
        return EmbeddingResponse(embeddings=rows)


async def quality(p: dict[str, Any]) -> dict[str, Any]:
    """Archivist's default configuration (what `archivist eval` runs) on a BEIR dataset;
    `mode` picks hybrid (the default), dense or sparse search."""
    config = EvalConfig(
        dataset_dir=p["dataset"],
        mode=p.get("mode", "hybrid"),
        queries=p.get("queries"),
        corpus=p.get("corpus"),
        seed=p.get("seed", 0),
        cache_dir=p["cache_dir"],
        search_depth=p.get("depth", 300),
    )
    result = await run_evaluation(config)
    return {
        "system": "archivist",
        "documents": result.documents,
        "chunks": result.chunks,
        "queries": result.queries,
        "metrics": result.metrics,
        "index_seconds": result.index_seconds,
        "search_seconds": result.search_seconds,
    }


async def bm25(p: dict[str, Any]) -> dict[str, Any]:
    """The BM25 baseline: bm25s with English stop words and Snowball stemming."""
    data = load_beir(p["dataset"]).subset(p.get("queries"), p.get("corpus"), p.get("seed", 0))
    started = time.perf_counter()
    run = bm25_run(data)
    return {
        "system": "bm25s",
        "documents": len(data.corpus),
        "queries": len(per_query(run, data.qrels)),
        "metrics": evaluate(run, data.qrels),
        "index_and_search_seconds": round(time.perf_counter() - started, 2),
    }


def bm25_run(data: Any, depth: int = 100) -> dict[str, dict[str, float]]:
    """bm25s (Lucene variant, English stop words, Snowball stemming) over title + text."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    corpus_tokens = bm25s.tokenize(
        [d.text_for_indexing for d in data.corpus],
        stopwords="en",
        stemmer=stemmer,
        show_progress=False,
    )
    retriever = bm25s.BM25()
    retriever.index(corpus_tokens, show_progress=False)
    query_tokens = bm25s.tokenize(
        [q.text for q in data.queries], stopwords="en", stemmer=stemmer, show_progress=False
    )
    k = min(depth, len(data.corpus))
    docs, scores = retriever.retrieve(query_tokens, k=k, show_progress=False, n_threads=1)
    return {
        q.id: {data.corpus[int(i)].id: float(s) for i, s in zip(docs[n], scores[n], strict=True)}
        for n, q in enumerate(data.queries)
    }


async def raw_embed(p: dict[str, Any]) -> dict[str, Any]:
    """The embedder alone on the chunk texts of the ingest files: the pipelines' ceiling."""
    from archivist.eval.dataset import CorpusDocument

    files = sorted(Path(p["dir"]).glob("*.txt"))
    docs = [CorpusDocument(_id=f.stem, text=f.read_text("utf-8")) for f in files]
    pairs = await chunk_documents(docs, ApproxTokenChunker(chunk_size=256, overlap=32))
    texts = [c.content for _, chunks in pairs for c in chunks]
    model = LocalEmbeddingModel()
    await model(["warm-up"])
    started = time.perf_counter()
    await model(texts, input_type="document")
    seconds = time.perf_counter() - started
    return {
        "system": "raw-embedder",
        "documents": len(files),
        "chunks": len(texts),
        "seconds": round(seconds, 3),
    }


async def ingest(p: dict[str, Any]) -> dict[str, Any]:
    """`archivist index`'s path: ingest_files (parse → chunk → embed → store), uncached model."""
    files = sorted(Path(p["dir"]).glob("*.txt"))
    model = LocalEmbeddingModel()
    await model(["warm-up"])
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase("ingest", "ingest benchmark", model, store, "ingest")
        await kb.ensure_collection()
        started = time.perf_counter()
        report = await ingest_files(
            kb, files, registry=default_registry(), chunker=ApproxTokenChunker(256, 32)
        )
        seconds = time.perf_counter() - started
    if report.failed:
        raise RuntimeError(f"ingest failed: {report.failed[0]}")
    chunks = sum(r.chunks for r in report.results)
    return {
        "system": "archivist",
        "documents": len(files),
        "chunks": chunks,
        "seconds": round(seconds, 3),
    }


async def latency(p: dict[str, Any]) -> dict[str, Any]:
    """KnowledgeBase.search top-5 latency with and without a tenant filter, given vectors;
    exact search as loaded, then (with `optimize`) after building the HNSW index."""
    size = p["size"]
    data = vectors(size)
    lookup = LookupEmbedding(query_vectors(p["queries"]))
    out: dict[str, Any] = {"system": "archivist", "size": size}
    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
        started = time.perf_counter()
        await store.create_collection("bench", DIMENSIONS)
        for start in range(0, size, INSERT_BATCH):
            batch = [
                VectorRecord(
                    vector=vector,
                    document_id=document_of(row),
                    chunk=Chunk(
                        content=TextBlock(text=f"chunk {row}"),
                        source=f"{document_of(row)}.txt",
                        chunk_index=row % 10,
                        total_chunks=10,
                        metadata={"tenant": tenant_of(row)},
                    ),
                )
                for row, vector in enumerate(data[start : start + INSERT_BATCH].tolist(), start)
            ]
            await store.insert("bench", batch)
        out["insert_seconds"] = round(time.perf_counter() - started, 2)
        out["rss_after_insert_mb"] = _rss_now_mb()
        phases = [("", False)] + ([("hnsw_", True)] if p.get("optimize") else [])
        for prefix, build in phases:
            if build:
                t0 = time.perf_counter()
                await store.optimize("bench")
                out["optimize_seconds"] = round(time.perf_counter() - t0, 2)
            for label, flt in (("unfiltered", None), ("filtered", {"tenant": "t3"})):
                kb = KnowledgeBase("bench", "bench", lookup, store, "bench", metadata_filter=flt)

                async def search(q: str, kb: KnowledgeBase = kb) -> Any:
                    return await kb.search(q, top_k=TOP_K)

                times = await timed_queries(search, p["queries"], p["budget_s"])
                out[prefix + label] = summary(times)
    return out


def _rss_now_mb() -> float:
    """Current resident memory from /proc (Linux), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


async def pdf(p: dict[str, Any]) -> dict[str, Any]:
    """Archivist's PDFParser (pypdfium2) on the generated PDF: best of `repeat` runs."""
    data = Path(p["path"]).read_bytes()
    parser = PDFParser()
    best, pages, chars = float("inf"), 0, 0
    for _ in range(p.get("repeat", 3)):
        started = time.perf_counter()
        sections = await parser.parse(data, "bench.pdf")
        best = min(best, time.perf_counter() - started)
        pages = len(sections)
        chars = sum(len(s.content.text) for s in sections if isinstance(s.content, TextBlock))
    return {"system": "archivist", "sections": pages, "chars": chars, "seconds": round(best, 4)}


TASKS = {
    "quality": quality,
    "bm25": bm25,
    "raw_embed": raw_embed,
    "ingest": ingest,
    "latency": latency,
    "pdf": pdf,
}

if __name__ == "__main__":
    task, params = sys.argv[1], json.loads(sys.argv[2])
    emit(asyncio.run(TASKS[task](params)))
