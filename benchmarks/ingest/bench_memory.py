"""Peak RSS of ingestion and of the SciFact quality run, next to AgentScope 2.0.11's.

Ingestion is `ingest_files` (the path `archivist index` runs) of SciFact documents, one large
text file and one long PDF; AgentScope 2.0.11 does the same work; each case in a fresh process.

Each worker loads the default local model, embeds one text (the model's own footprint,
`model_mb`), then ingests into an in-memory Qdrant store and reports its peak RSS; `over_model_mb`
is the difference. `--src DIR` runs the same cases against another checkout's `src/` (e.g. main
exported with `git archive`) for a before/after comparison.

    .venv/bin/python -m benchmarks memory --cases scifact:300 chunk-text:200 chunk-pdf:2000
    .venv/bin/python -m benchmarks memory \
        --cases scifact:300 agentscope-scifact:300 quality:1000 agentscope-quality:1000

`chunk-text:MB` / `chunk-pdf:PAGES` run only the parse + chunk pass (no model); `text:MB` and
`pdf:PAGES` ingest end to end. `quality:N` is `archivist eval` on SciFact with all queries and a
corpus of N documents (0: all), uncached. The `agentscope-` cases run AgentScope's own
KnowledgeBase (TextParser, ApproxTokenChunker 256/32, `insert_document` per document) in the
venv `.venv-agentscope` (as tests/compat makes it, plus `pip install -e .`; or
`$ARCHIVIST_AGENTSCOPE_VENV`), embedding with the same local model through
`agentscope_driver.ArchivistEmbedding`, uncached.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import RESULTS, ROOT, SCIFACT

TMP = RESULTS / "tmp"
MARKER = "BENCH_MEMORY "
AGENTSCOPE_VENV = Path(os.environ.get("ARCHIVIST_AGENTSCOPE_VENV", ROOT / ".venv-agentscope"))
LINE = "The quarterly report covers revenue, costs and the outlook for the next year {n}. "


def _peak_mb() -> float:
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def scifact_files(count: int) -> list[Path]:
    """`count` SciFact documents (seed-0 sample, as run_suite.py) as .txt files."""
    from archivist.eval import load_beir

    folder = TMP / f"ingest-{count}"
    if not folder.is_dir() or len(list(folder.glob("*.txt"))) != count:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.txt"):
            old.unlink()
        for doc in random.Random(0).sample(load_beir(SCIFACT).corpus, count):
            (folder / f"{doc.id}.txt").write_text(doc.text_for_indexing, "utf-8")
    return sorted(folder.glob("*.txt"))


def text_file(megabytes: int) -> Path:
    """A generated plain-text file of about `megabytes` MiB (paragraphs of distinct lines)."""
    path = TMP / f"big-{megabytes}mb.txt"
    if not path.exists():
        TMP.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            n = 0
            while fh.tell() < megabytes * 1024 * 1024:
                fh.write("".join(LINE.format(n=n + i) for i in range(8)) + "\n\n")
                n += 8
    return path


def pdf_file(pages: int) -> Path:
    """A generated `pages`-page text PDF (40 lines a page), made once."""
    path = TMP / f"bench-{pages}.pdf"
    if not path.exists():
        from factories import make_pdf

        TMP.mkdir(parents=True, exist_ok=True)
        pages_text = ["\n".join(LINE.format(n=p * 40 + i) for i in range(40)) for p in range(pages)]
        path.write_bytes(make_pdf(pages_text))
    return path


async def chunk_only(case: str, size: int) -> dict[str, Any]:
    """Parse and chunk one large file as ingestion's first pass does (no model): streamed
    where the parser streams, else `parse` + `chunk` whole."""
    from archivist.embedding import LocalEmbeddingModel
    from archivist.rag import default_registry
    from archivist.rag.chunker import chunker_for

    path = text_file(size) if case == "text" else pdf_file(size)
    parser = default_registry().parser_for_path(path)
    chunker = chunker_for(LocalEmbeddingModel().chunk_tokenizer())
    started = time.perf_counter()
    count = 0
    if hasattr(parser, "stream_sections") and hasattr(chunker, "chunk_stream"):
        async for _ in chunker.chunk_stream(parser.stream_sections(str(path), path.name)):
            count += 1
    else:
        count = len(await chunker.chunk(await parser.parse(str(path), path.name)))
    return {
        "case": f"chunk-only {case}",
        "size": size,
        "chunks": count,
        "seconds": round(time.perf_counter() - started, 1),
        "peak_mb": _peak_mb(),
    }


async def worker(case: str, size: int) -> dict[str, Any]:
    """Ingest the case's files with the default model; peak RSS before and after."""
    from archivist.embedding import LocalEmbeddingModel
    from archivist.rag import ApproxTokenChunker, ChunkerBase, KnowledgeBase, default_registry
    from archivist.rag.chunker import chunker_for
    from archivist.rag.knowledge.ingest import ingest_files
    from archivist.rag.store.qdrant import QdrantStore

    files = (
        scifact_files(size)
        if case == "scifact"
        else [text_file(size)]
        if case == "text"
        else [pdf_file(size)]
    )
    model = LocalEmbeddingModel()
    await model(["warm-up"])
    model_mb = _peak_mb()
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase("memory", "memory benchmark", model, store, "memory")
        started = time.perf_counter()
        # SciFact as run_suite.py chunks it; large files with the chunker `archivist index` uses
        chunker: ChunkerBase = (
            ApproxTokenChunker(256, 32)
            if case == "scifact"
            else chunker_for(model.chunk_tokenizer())
        )
        report = await ingest_files(kb, files, registry=default_registry(), chunker=chunker)
        seconds = time.perf_counter() - started
    if report.failed:
        raise RuntimeError(f"ingest failed: {report.failed[0]}")
    peak = _peak_mb()
    return {
        "case": case,
        "size": size,
        "chunks": sum(r.chunks for r in report.results),
        "seconds": round(seconds, 1),
        "model_mb": model_mb,
        "peak_mb": peak,
        "over_model_mb": round(peak - model_mb, 1),
    }


async def quality(size: int) -> dict[str, Any]:
    """`archivist eval` on SciFact (all queries, a corpus of `size` documents, 0 = all),
    default configuration, uncached model."""
    from archivist.eval import EvalConfig, run_evaluation

    model_mb = _peak_mb()
    config = EvalConfig(dataset_dir=SCIFACT, corpus=size or None, cache_dir=None)
    result = await run_evaluation(config)
    return {
        "case": "quality",
        "size": size,
        "documents": result.documents,
        "chunks": result.chunks,
        "ndcg@10": round(result.metrics["nDCG@10"], 4),
        "seconds": round(result.index_seconds + result.search_seconds, 1),
        "before_model_mb": model_mb,
        "peak_mb": _peak_mb(),
    }


async def agentscope_case(case: str, size: int) -> dict[str, Any]:
    """AgentScope's KnowledgeBase on the same work, embedding with the same local model:
    TextParser → ApproxTokenChunker(256, 32) → `insert_document` per document, and for
    `quality` one search per query (document score = best chunk score)."""
    from agentscope.rag import ApproxTokenChunker as ASChunker
    from agentscope.rag import KnowledgeBase as ASKnowledgeBase
    from agentscope.rag import QdrantStore as ASQdrantStore
    from agentscope.rag import TextParser as ASTextParser
    from agentscope_driver import model

    from archivist.eval import evaluate, load_beir

    parser = ASTextParser()
    chunker = ASChunker(ASChunker.Parameters(chunk_size=256, overlap=32))
    if case == "quality":
        data = load_beir(SCIFACT).subset(None, size or None, 0)
        sources = [(d.id, d.text_for_indexing.encode("utf-8")) for d in data.corpus]
    else:
        sources = [(p.stem, p.read_bytes()) for p in scifact_files(size)]
    embedder = model(None)
    await embedder(["warm-up"])
    model_mb = _peak_mb()
    chunks_total = 0
    started = time.perf_counter()
    extra: dict[str, Any] = {}
    async with ASQdrantStore(location=":memory:") as store:
        kb = ASKnowledgeBase("memory", "memory benchmark", embedder, store, "memory")
        await kb.ensure_collection()
        for doc_id, raw in sources:
            if not raw.strip():
                continue
            chunks = await chunker.chunk(await parser.parse(raw, f"{doc_id}.txt"))
            chunks_total += len(chunks)
            await kb.insert_document(chunks, document_id=doc_id)
        if case == "quality":
            run: dict[str, dict[str, float]] = {}
            for query in data.queries:
                scores: dict[str, float] = {}
                for hit in await kb.search([query.text], top_k=300):
                    scores[hit.document_id] = max(hit.score, scores.get(hit.document_id, -1e9))
                run[query.id] = scores
            extra["ndcg@10"] = round(evaluate(run, data.qrels)["nDCG@10"], 4)
    peak = _peak_mb()
    return {
        "case": f"agentscope-{case}",
        "size": size,
        "documents": len(sources),
        "chunks": chunks_total,
        **extra,
        "seconds": round(time.perf_counter() - started, 1),
        "model_mb": model_mb,
        "peak_mb": peak,
        "over_model_mb": round(peak - model_mb, 1),
    }


def run(case: str, size: int, src: Path | None) -> dict[str, Any]:
    """One case in a fresh process (with `src` first on the path, if given)."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    python = sys.executable
    if case.startswith("agentscope-"):
        python = str(AGENTSCOPE_VENV / "bin" / "python")
        if not Path(python).exists():
            return {"case": case, "size": size, "error": f"no AgentScope venv at {AGENTSCOPE_VENV}"}
    proc = subprocess.run(
        [python, "-m", "benchmarks", "memory", "--worker", case, str(size)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    for line in proc.stdout.splitlines():
        if line.startswith(MARKER):
            result: dict[str, Any] = json.loads(line[len(MARKER) :])
            return result
    return {"case": case, "size": size, "error": proc.stderr.strip().splitlines()[-3:]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=["scifact:300", "text:20", "pdf:2000"])
    parser.add_argument("--src", type=Path, help="run against this src/ directory instead")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        case, size = args.worker[0], int(args.worker[1])
        if case.startswith("chunk-"):
            result = asyncio.run(chunk_only(case.removeprefix("chunk-"), size))
        elif case.startswith("agentscope-"):
            result = asyncio.run(agentscope_case(case.removeprefix("agentscope-"), size))
        elif case == "quality":
            result = asyncio.run(quality(size))
        else:
            result = asyncio.run(worker(case, size))
        print(MARKER + json.dumps(result), flush=True)
        return
    for spec in args.cases:
        case, size = spec.split(":")
        print(json.dumps(run(case, int(size), args.src)), flush=True)


if __name__ == "__main__":
    main()
