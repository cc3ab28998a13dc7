"""What collapsing copies costs and gives, on a SciFact sample indexed twice.

The sample is indexed twice (as two checkouts of one folder would be) and searched with
`collapse_duplicates` on and off, alternating query by query so machine noise hits both alike.

    .venv/bin/python -m benchmarks duplicates [--docs 300] [--queries 100]

Reports distinct texts among the top 5 and the p50/p95 search latency of each setting; writes
benchmarks/results/duplicates.json. SciFact from `../shared/datasets/scifact` or
`$SCIFACT_DIR`; skipped cleanly where absent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from typing import Any

from _common import SCIFACT, write_result

TOP_K = 5


async def run(docs: int, queries: int) -> dict[str, Any]:
    from archivist.embedding import LocalEmbeddingModel
    from archivist.eval import load_beir
    from archivist.message import TextBlock
    from archivist.rag import ApproxTokenChunker, KnowledgeBase, NewDocument, TextParser
    from archivist.rag.store.qdrant import QdrantStore

    data = load_beir(SCIFACT).subset(queries, docs, 0)
    model = LocalEmbeddingModel()
    chunker = ApproxTokenChunker(256, 32)
    parser = TextParser()
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase("bench", "", model, store, "bench")
        documents = []
        for doc in data.corpus:
            sections = await parser.parse(doc.text_for_indexing.encode(), f"{doc.id}.txt")
            chunks = await chunker.chunk(sections)
            for checkout in ("a", "b"):
                copies = [c.model_copy(deep=True) for c in chunks]
                documents.append(NewDocument(copies, f"{checkout}/{doc.id}"))
        await kb.insert_documents(documents)
        texts = [q.text for q in data.queries]
        await kb.search(texts[0])
        timings: dict[bool, list[float]] = {True: [], False: []}
        distinct: dict[bool, list[int]] = {True: [], False: []}
        for text in texts:
            for collapse in (True, False) if len(timings[True]) % 2 else (False, True):
                tick = time.perf_counter()
                hits = await kb.search(text, top_k=TOP_K, collapse_duplicates=collapse)
                timings[collapse].append(1000 * (time.perf_counter() - tick))
                texts_found = {
                    h.chunk.content.text for h in hits if isinstance(h.chunk.content, TextBlock)
                }
                distinct[collapse].append(len(texts_found))

    def summary(collapse: bool) -> dict[str, float]:
        ms = sorted(timings[collapse])
        return {
            "distinct_texts_in_top5_mean": round(statistics.mean(distinct[collapse]), 2),
            "search_p50_ms": round(statistics.median(ms), 2),
            "search_p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2),
        }

    return {
        "documents": len(data.corpus) * 2,
        "queries": len(texts),
        "collapse_on": summary(True),
        "collapse_off": summary(False),
        "load_avg": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args(argv)
    if not SCIFACT.is_dir():
        print(f"skipped: no SciFact at {SCIFACT}")
        return
    result = asyncio.run(run(args.docs, args.queries))
    write_result("duplicates", result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
