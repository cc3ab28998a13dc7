"""The design page's custom-store skeleton, filled in, through every KnowledgeBase operation.

Its methods keep the page's exact signatures: `delete(collection, document_id)` has no
`metadata_filter`, and there is no `list_chunks`, `document_generations` or `repair_document`.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import pytest

from archivist.message import TextBlock
from archivist.rag import Chunk, KnowledgeBase
from archivist.rag.knowledge.knowledge_base import DocumentNotFoundError, NewDocument
from archivist.rag.record import DocumentSummary, VectorRecord, VectorSearchResult
from archivist.rag.store.base import VectorStoreBase
from archivist.testing.embedding import HashEmbeddingModel


class MyVectorStore(VectorStoreBase):
    """The page's skeleton with a dict for a backend."""

    async def __aenter__(self) -> MyVectorStore:
        self._client: dict[str, tuple[int, dict[tuple[str, int], VectorRecord]]] = {}
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._client.clear()

    async def create_collection(self, name: str, dimensions: int) -> None:
        self._client.setdefault(name, (dimensions, {}))

    async def delete_collection(self, name: str) -> None:
        self._client.pop(name, None)

    async def has_collection(self, name: str) -> bool:
        return name in self._client

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        rows = self._client[collection][1]
        for record in records:
            rows[(record.document_id, record.chunk.chunk_index)] = record

    async def delete(self, collection: str, document_id: str) -> None:
        rows = self._client[collection][1]
        for key in [key for key in rows if key[0] == document_id]:
            del rows[key]

    async def search(
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        found = [
            VectorSearchResult(
                score=_cosine(query_vector, r.vector), document_id=r.document_id, chunk=r.chunk
            )
            for r in self._client[collection][1].values()
            if _matches(r, metadata_filter)
        ]
        return sorted(found, key=lambda hit: -hit.score)[:top_k]

    async def list_documents(
        self,
        collection: str,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[DocumentSummary]:
        chunks: dict[str, list[Chunk]] = {}
        for record in self._client.get(collection, (0, {}))[1].values():
            if _matches(record, metadata_filter):
                chunks.setdefault(record.document_id, []).append(record.chunk)
        return [
            DocumentSummary(
                document_id=document_id,
                source=min(found, key=lambda c: c.chunk_index).source,
                chunk_count=len(found),
                metadata=min(found, key=lambda c: c.chunk_index).metadata,
            )
            for document_id, found in sorted(chunks.items())
        ]


def _matches(record: VectorRecord, metadata_filter: dict[str, Any] | None) -> bool:
    meta = record.chunk.metadata
    return all(meta.get(k) == v for k, v in (metadata_filter or {}).items())


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


# Bag of hashed words: texts sharing words have close vectors.
HashEmbedding = partial(HashEmbeddingModel, 32, model="hash-words")


def chunks(text: str, source: str) -> list[Chunk]:
    parts = text.split(". ")
    return [
        Chunk(content=TextBlock(text=p), source=source, chunk_index=i, total_chunks=len(parts))
        for i, p in enumerate(parts)
    ]


async def test_the_skeleton_store_runs_every_knowledge_base_operation() -> None:
    async with MyVectorStore() as store:
        kb = KnowledgeBase(
            name="kb",
            description="skeleton",
            embedding_model=HashEmbedding(),
            vector_store=store,
            collection="docs",
        )
        cats = await kb.insert_document(chunks("cats sleep a lot. cats purr", "cats.md"), "cats")
        ids = await kb.insert_documents(
            [
                NewDocument(chunks("dogs bark loudly. dogs fetch sticks", "dogs.md"), "dogs"),
                NewDocument(chunks("fish swim in water", "fish.md"), "fish"),
            ]
        )
        assert [cats, *ids] == ["cats", "dogs", "fish"]
        await kb.insert_document(chunks("cats sleep all day. cats purr softly", "cats.md"), "cats")
        summaries = await kb.list_documents()
        assert [(s.document_id, s.chunk_count) for s in summaries] == [
            ("cats", 2),
            ("dogs", 2),
            ("fish", 1),
        ]
        hits = await kb.search(["dogs fetch sticks"], top_k=1)
        assert [(h.document_id, h.chunk.chunk_index) for h in hits] == [("dogs", 1)]
        await kb.delete_document("dogs")
        assert [s.document_id for s in await kb.list_documents()] == ["cats", "fish"]
        with pytest.raises(DocumentNotFoundError):
            await kb.delete_document("nobody")
        for optional in (kb.list_chunks("cats"), kb.verify(), kb.repair()):
            with pytest.raises(NotImplementedError, match="MyVectorStore"):
                await optional


async def test_a_scoped_handle_refuses_a_delete_that_cannot_be_scoped() -> None:
    async with MyVectorStore() as store:
        kb = KnowledgeBase(
            name="kb",
            description="skeleton",
            embedding_model=HashEmbedding(),
            vector_store=store,
            collection="docs",
            metadata_filter={"tenant": "t1"},
        )
        with pytest.raises(TypeError, match="MyVectorStore.delete has no metadata_filter"):
            await kb.insert_document(chunks("cats purr", "cats.md"), "cats")
