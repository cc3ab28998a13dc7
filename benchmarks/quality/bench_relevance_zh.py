"""Relevance on the Chinese set: does the right document, and only it, clear the floor?

For each question: does the right document clear the default `min_relevance`, and does any
other? The 20 Chinese documents and questions of the `hybrid zh` case, default model and
hybrid default (the model cannot read Chinese, so these questions go by BM25 alone and their
relevance by term coverage alone).

    .venv/bin/python -m benchmarks relevance_zh
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from archivist.embedding import LocalEmbeddingModel
from archivist.message import TextBlock
from archivist.rag import Chunk, KnowledgeBase
from archivist.rag.store.core.relevance import DEFAULT_MIN_RELEVANCE
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing import corpora

DATA = Path(corpora.__file__).parent / "zh_topics.json"


async def run() -> None:
    data = json.loads(DATA.read_text())
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase("zh", "zh", LocalEmbeddingModel(), store, "zh")
        for name, text in data["documents"].items():
            chunk = Chunk(content=TextBlock(text=text), source=name, chunk_index=0, total_chunks=1)
            await kb.insert_document([chunk], document_id=name)
        right = other = 0
        for name, question in data["questions"].items():
            hits = await kb.search(question, top_k=5)
            mine = [h.relevance or 0 for h in hits if h.document_id == name]
            right += bool(mine) and mine[0] >= DEFAULT_MIN_RELEVANCE
            other += any(
                (h.relevance or 0) >= DEFAULT_MIN_RELEVANCE for h in hits if h.document_id != name
            )
        total = len(data["questions"])
        print(f"right document clears {DEFAULT_MIN_RELEVANCE}: {right}/{total}")
        print(f"another document clears it: {other}/{total}")


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    asyncio.run(run())


if __name__ == "__main__":
    main()
