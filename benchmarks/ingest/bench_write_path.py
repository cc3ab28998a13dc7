"""The write path's own cost: `KnowledgeBase.insert_documents` with an instant stand-in model.

Random unit vectors (384-d, numpy) take the model's time out, so what is left
is stamping, checking, payloads, BM25 and the engine (Qdrant Edge in memory, hybrid): many
small documents (3 chunks each, the list path) and one streamed document. Compare two
versions by running this file with each one's `src` on PYTHONPATH, by turns.

    PYTHONPATH=src .venv/bin/python -m benchmarks write_path
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import numpy as np
from _common import write_result

from archivist.embedding import EmbeddingModelBase, EmbeddingResponse
from archivist.embedding.base import BatchItem, InputType
from archivist.message import TextBlock
from archivist.rag import Chunk, KnowledgeBase, NewDocument
from archivist.rag.store.qdrant import QdrantStore

WORDS = [
    "the",
    "harbour",
    "ledger",
    "records",
    "tolls",
    "berths",
    "cargo",
    "and",
    "the",
    "names",
    "of",
    "ships",
]


class RandomVectors(EmbeddingModelBase):
    """Random unit vectors, instantly: a model whose cost is nothing."""

    def __init__(self) -> None:
        super().__init__(model="random-384", dimensions=384, batch_size=64)
        self._rng = np.random.default_rng(0)

    async def _embed_items(
        self, items: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        vectors = self._rng.standard_normal((len(items), 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return EmbeddingResponse(embeddings=vectors.tolist())


def _text(index: int) -> str:
    return " ".join(WORDS[(index + k) % len(WORDS)] for k in range(150)) + f" entry {index}"


def _chunk(index: int, total: int, source: str) -> Chunk:
    return Chunk(
        content=TextBlock(text=_text(index)),
        source=source,
        chunk_index=index,
        total_chunks=total,
        metadata={"page": index},
    )


async def run(documents: int, streamed: int) -> dict[str, Any]:
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase(
            name="ledger",
            description="ledger",
            embedding_model=RandomVectors(),
            vector_store=store,
            collection="ledger",
        )
        small = [
            NewDocument([_chunk(i, 3, f"memo-{d}.txt") for i in range(3)], f"memo-{d}")
            for d in range(documents)
        ]
        started = time.perf_counter()
        await kb.insert_documents(small)
        small_seconds = time.perf_counter() - started

        async def stream() -> AsyncIterator[Chunk]:
            for index in range(streamed):
                yield _chunk(index, streamed, "book.txt")

        started = time.perf_counter()
        await kb.insert_documents([NewDocument(stream(), "book")])
        streamed_seconds = time.perf_counter() - started
    return {
        "small_documents": documents,
        "small_seconds": round(small_seconds, 2),
        "small_chunks_per_s": round(3 * documents / small_seconds),
        "streamed_chunks": streamed,
        "streamed_seconds": round(streamed_seconds, 2),
        "streamed_chunks_per_s": round(streamed / streamed_seconds),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=1500)
    parser.add_argument("--streamed", type=int, default=3000)
    parser.add_argument("--name", default="write_path", help="result file name")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.documents, args.streamed))
    print(result)
    print(f"wrote {write_result(args.name, result)}")


if __name__ == "__main__":
    main()
