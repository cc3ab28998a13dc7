"""Drives AgentScope 2.0.11's RAG pipeline through its public API for the benchmark suite.

Runs inside the suite's own venv (`benchmarks/.venv-agentscope`), which also has Archivist
installed so this driver embeds with the very same `LocalEmbeddingModel()` (wrapped in
AgentScope's `EmbeddingModelBase`) and loads data with the same loader. Usage:

    python agentscope_driver.py TASK PARAMS_JSON      # TASK: quality | ingest | latency | pdf

Prints one `SUITE-RESULT {json}` line.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
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
from agentscope.credential import CredentialBase
from agentscope.embedding import EmbeddingModelBase, EmbeddingResponse
from agentscope.message import TextBlock
from agentscope.rag import (
    ApproxTokenChunker,
    Chunk,
    KnowledgeBase,
    PDFParser,
    QdrantStore,
    TextParser,
    VectorRecord,
)

import archivist.embedding as archivist_embedding


class ArchivistEmbedding(EmbeddingModelBase[str | TextBlock]):
    """AgentScope's embedding base class over an Archivist embedding model."""

    def __init__(self, inner: archivist_embedding.EmbeddingModelBase) -> None:
        super().__init__(
            credential=CredentialBase(),
            model=inner.model,
            dimensions=inner.dimensions,
            parameters=None,
            context_size=256,
            batch_size=max(inner.batch_size, 1024),  # Archivist batches below this
            max_retries=0,
            retry_delay=0.0,
        )
        self.inner = inner

    async def _call_api(self, inputs: list[Any], **kwargs: Any) -> EmbeddingResponse:
        response = await self.inner(list(inputs), input_type="document")
        return EmbeddingResponse(embeddings=response.embeddings)


class LookupEmbedding(EmbeddingModelBase[str | TextBlock]):
    """Returns a precomputed vector for query `q<i>`, so latency excludes the model."""

    def __init__(self, table: list[list[float]]) -> None:
        super().__init__(
            credential=CredentialBase(),
            model="lookup",
            dimensions=DIMENSIONS,
            parameters=None,
            context_size=1,
            batch_size=64,
            max_retries=0,
            retry_delay=0.0,
        )
        self.table = table

    async def _call_api(self, inputs: list[Any], **kwargs: Any) -> EmbeddingResponse:
        return EmbeddingResponse(
            embeddings=[self.table[int(q[1:]) % len(self.table)] for q in inputs]
        )


def model(cache_dir: str | None) -> ArchivistEmbedding:
    """Archivist's default model (behind its disk cache when asked), wrapped."""
    inner = archivist_embedding.LocalEmbeddingModel()
    if cache_dir:
        inner = archivist_embedding.CachedEmbeddingModel(inner, cache_dir)
    return ArchivistEmbedding(inner)


async def quality(p: dict[str, Any]) -> dict[str, Any]:
    """The seed configuration (ApproxTokenChunker 256/32, dense only) on a BEIR dataset."""
    from archivist.eval import evaluate, load_beir, per_query

    data = load_beir(p["dataset"]).subset(p.get("queries"), p.get("corpus"), p.get("seed", 0))
    chunker = ApproxTokenChunker(ApproxTokenChunker.Parameters(chunk_size=256, overlap=32))
    parser = TextParser()
    started = time.perf_counter()
    embedder = model(p["cache_dir"])
    prepared = []
    for doc in data.corpus:
        text = doc.text_for_indexing
        if text.strip():
            sections = await parser.parse(text.encode("utf-8"), f"{doc.id}.txt")
            prepared.append((doc.id, await chunker.chunk(sections)))
    # Fill the shared cache in full batches first (same vectors, far fewer model calls):
    # this run measures quality, not speed.
    texts = [c.content.text for _, chunks in prepared for c in chunks]
    for start in range(0, len(texts), 512):
        await embedder.inner(texts[start : start + 512], input_type="document")
    chunks_total = sum(len(chunks) for _, chunks in prepared)
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase("scifact", "SciFact abstracts", embedder, store, "eval")
        for doc_id, chunks in prepared:
            await kb.insert_document(chunks, document_id=doc_id)
        indexed = time.perf_counter()
        run: dict[str, dict[str, float]] = {}
        for query in data.queries:
            scores: dict[str, float] = {}
            for hit in await kb.search([query.text], top_k=p.get("depth", 300)):
                scores[hit.document_id] = max(hit.score, scores.get(hit.document_id, -1e9))
            run[query.id] = scores
        searched = time.perf_counter()
    return {
        "system": "agentscope",
        "documents": len(data.corpus),
        "chunks": chunks_total,
        "queries": len(per_query(run, data.qrels)),
        "metrics": evaluate(run, data.qrels),
        "index_seconds": round(indexed - started, 2),
        "search_seconds": round(searched - indexed, 2),
    }


async def ingest(p: dict[str, Any]) -> dict[str, Any]:
    """Files → TextParser → ApproxTokenChunker(256, 32) → insert_document, uncached model."""
    files = sorted(Path(p["dir"]).glob("*.txt"))
    embedder = model(None)
    await embedder(["warm-up"])  # load the model outside the timed part
    parser, chunker = (
        TextParser(),
        ApproxTokenChunker(ApproxTokenChunker.Parameters(chunk_size=256, overlap=32)),
    )
    chunks_total = 0
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase("ingest", "ingest benchmark", embedder, store, "ingest")
        await kb.ensure_collection()
        started = time.perf_counter()
        for path in files:
            sections = await parser.parse(str(path), path.name)
            chunks = await chunker.chunk(sections)
            chunks_total += len(chunks)
            await kb.insert_document(chunks, document_metadata={"path": str(path)})
        seconds = time.perf_counter() - started
    return {
        "system": "agentscope",
        "documents": len(files),
        "chunks": chunks_total,
        "seconds": round(seconds, 3),
    }


async def latency(p: dict[str, Any]) -> dict[str, Any]:
    """KnowledgeBase.search top-5 latency with and without a tenant filter, given vectors."""
    size = p["size"]
    data = vectors(size)
    lookup = LookupEmbedding(query_vectors(p["queries"]))
    out: dict[str, Any] = {"system": "agentscope", "size": size}
    async with QdrantStore(location=":memory:") as store:
        started = time.perf_counter()
        await store.create_collection("bench", dimensions=DIMENSIONS)
        for start in range(0, size, INSERT_BATCH):
            batch = []
            for offset, vector in enumerate(data[start : start + INSERT_BATCH].tolist()):
                row = start + offset
                batch.append(
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
                )
            await store.insert("bench", batch)
        out["insert_seconds"] = round(time.perf_counter() - started, 2)
        for label, flt in (("unfiltered", None), ("filtered", {"tenant": "t3"})):
            kb = KnowledgeBase("bench", "bench", lookup, store, "bench", metadata_filter=flt)

            async def search(q: str, kb: KnowledgeBase = kb) -> Any:
                return await kb.search([q], top_k=TOP_K)

            times = await timed_queries(search, p["queries"], p["budget_s"])
            out[label] = summary(times)
    return out


async def pdf(p: dict[str, Any]) -> dict[str, Any]:
    """AgentScope's PDFParser (pypdf) on the generated PDF: best of `repeat` runs."""
    data = Path(p["path"]).read_bytes()
    parser = PDFParser()
    best, pages, chars = float("inf"), 0, 0
    for _ in range(p.get("repeat", 3)):
        started = time.perf_counter()
        sections = await parser.parse(data, "bench.pdf")
        best = min(best, time.perf_counter() - started)
        pages = len(sections)
        chars = sum(len(s.content.text) for s in sections if isinstance(s.content, TextBlock))
    return {"system": "agentscope", "sections": pages, "chars": chars, "seconds": round(best, 4)}


TASKS = {"quality": quality, "ingest": ingest, "latency": latency, "pdf": pdf}

if __name__ == "__main__":
    task, params = sys.argv[1], json.loads(sys.argv[2])
    emit(asyncio.run(TASKS[task](params)))
