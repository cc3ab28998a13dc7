"""The design page's custom vector store skeleton (exact signatures: `delete` takes no
metadata_filter), filled in with a dict, through every KnowledgeBase operation."""

import asyncio
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _toy import BagOfWordsEmbedding
from agentscope.message import TextBlock
from agentscope.rag import (
    Chunk,
    DocumentSummary,
    KnowledgeBase,
    VectorRecord,
    VectorSearchResult,
    VectorStoreBase,
)


class MyVectorStore(VectorStoreBase):
    async def __aenter__(self) -> "MyVectorStore":
        self._client: dict[str, dict[tuple[str, int], VectorRecord]] = {}
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        self._client.clear()

    async def create_collection(self, name: str, dimensions: int) -> None:
        self._client.setdefault(name, {})

    async def delete_collection(self, name: str) -> None:
        self._client.pop(name, None)

    async def has_collection(self, name: str) -> bool:
        return name in self._client

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        for record in records:
            self._client[collection][(record.document_id, record.chunk.chunk_index)] = record

    async def delete(self, collection: str, document_id: str) -> None:
        rows = self._client[collection]
        for key in [key for key in rows if key[0] == document_id]:
            del rows[key]

    async def search(
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        def cosine(a: list[float], b: list[float]) -> float:
            dot = sum(x * y for x, y in zip(a, b, strict=True))
            return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

        found = [
            VectorSearchResult(
                score=cosine(query_vector, r.vector), document_id=r.document_id, chunk=r.chunk
            )
            for r in self._client.get(collection, {}).values()
            if all(r.chunk.metadata.get(k) == v for k, v in (metadata_filter or {}).items())
        ]
        return sorted(found, key=lambda hit: -hit.score)[:top_k]

    async def list_documents(
        self,
        collection: str,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[DocumentSummary]:
        first: dict[str, Chunk] = {}
        counts: dict[str, int] = {}
        for (document_id, _index), record in sorted(self._client.get(collection, {}).items()):
            counts[document_id] = counts.get(document_id, 0) + 1
            first.setdefault(document_id, record.chunk)
        return [
            DocumentSummary(
                document_id=d,
                source=first[d].source,
                chunk_count=counts[d],
                metadata=first[d].metadata,
            )
            for d in sorted(first)
        ]


def chunks(texts: list[str], source: str) -> list[Chunk]:
    return [
        Chunk(content=TextBlock(text=t), source=source, chunk_index=i, total_chunks=len(texts))
        for i, t in enumerate(texts)
    ]


async def main() -> None:
    out: dict = {}
    async with MyVectorStore() as store:
        kb = KnowledgeBase(
            name="kb",
            description="custom store",
            embedding_model=BagOfWordsEmbedding(),
            vector_store=store,
            collection="docs",
        )
        await kb.insert_document(chunks(["Cats purr.", "Cats sleep."], "cats.md"), "cats")
        await kb.insert_document(chunks(["Dogs bark.", "Dogs fetch sticks."], "dogs.md"), "dogs")
        out["listed"] = [[s.document_id, s.chunk_count] for s in await kb.list_documents()]
        hits = await kb.search(["which animal fetch sticks"], top_k=1)
        out["top_hit"] = [[h.document_id, h.chunk.chunk_index] for h in hits]
        try:
            await kb.delete_document("dogs")
            out["delete"] = "ok"
        except Exception as error:  # the report names what broke
            out["delete"] = f"{type(error).__name__}: {error}"
        out["after_delete"] = [[s.document_id, s.chunk_count] for s in await kb.list_documents()]
    print(json.dumps(out))


asyncio.run(main())
