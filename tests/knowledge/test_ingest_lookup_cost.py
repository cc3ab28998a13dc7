"""Ingesting one file costs the same in a knowledge base of 10 or 1,000 documents: it looks up
its own document only, never lists the scope (which made N uploads into one base cost O(N^2))."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from functools import wraps
from pathlib import Path
from typing import Any

import numpy as np

from archivist.embedding import EmbeddingModelBase
from archivist.message import TextBlock
from archivist.rag import ApproxTokenChunker, KnowledgeBase, default_registry
from archivist.rag.document import Chunk
from archivist.rag.knowledge.ingest import Outcome, ingest_files
from archivist.rag.record import VectorRecord
from archivist.rag.store.core.layout import DOCUMENT_ID
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant.filter import Match, Where

TEXT = " ".join(f"Sentence {i} talks about herons, owls and kestrels." for i in range(60))


class EngineCalls:
    """Counts the calls QdrantStore makes into its engine, and the payloads they return."""

    def __init__(self, store: QdrantStore) -> None:
        self.calls: Counter[str] = Counter()
        self.payloads = 0
        engine = store._engine.backend  # type: ignore[attr-defined]
        for name in ("count", "facet", "scroll_ordered", "search", "upsert", "delete"):
            setattr(engine, name, self._counted(name, getattr(engine, name)))
        engine.scroll = self._counted_scroll(engine.scroll)

    def _counted(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(method)
        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            result = await method(*args, **kwargs)
            if isinstance(result, list | dict):
                self.payloads += len(result)
            return result

        return counted

    def _counted_scroll(self, method: Callable[..., Any]) -> Callable[..., Any]:
        async def counted(
            name: str, where: Where, *args: Any, **kwargs: Any
        ) -> AsyncIterator[list[dict[str, Any]]]:
            # A scroll within one document (a replace counting its old chunks' BM25 lengths
            # out) costs what the document holds, not what the collection does.
            one_document = any(
                isinstance(match, Match) and match.key == DOCUMENT_ID for match in where.must
            )
            self.calls["document scroll" if one_document else "scroll"] += 1
            async for page in method(name, where, *args, **kwargs):
                self.payloads += len(page)
                yield page

        return counted

    def reset(self) -> None:
        self.calls.clear()
        self.payloads = 0


async def filled_kb(
    store: QdrantStore, embedder: EmbeddingModelBase, collection: str, documents: int
) -> KnowledgeBase:
    """A knowledge base already holding `documents` two-chunk documents (random vectors)."""
    kb = KnowledgeBase(collection, "", embedder, store, collection)
    await kb.ensure_collection()
    vectors = np.random.default_rng(5).standard_normal((documents * 2, embedder.dimensions))
    records = [
        VectorRecord(
            vector=vectors[n].tolist(),
            document_id=str(uuid.UUID(int=n // 2)),
            chunk=Chunk(
                content=TextBlock(text=f"document {n // 2} part {n % 2}"),
                source=f"/docs/{n // 2}.txt",
                chunk_index=n % 2,
                total_chunks=2,
                metadata={"path": f"/docs/{n // 2}.txt", "content_sha256": "0" * 64},
            ),
        )
        for n in range(documents * 2)
    ]
    await store.insert(collection, records)
    return kb


async def test_one_file_costs_the_same_store_calls_among_10_or_1000_documents(
    tmp_path: Path, store: QdrantStore, embedder: EmbeddingModelBase
) -> None:
    path = tmp_path / "birds.txt"
    path.write_text(TEXT)
    small = await filled_kb(store, embedder, "small", 10)
    large = await filled_kb(store, embedder, "large", 1_000)
    assert len(await large.list_documents()) == 1_000
    counter = EngineCalls(store)
    options: dict[str, Any] = {
        "registry": default_registry(),
        "chunker": ApproxTokenChunker(64, 8),
    }

    cost: dict[tuple[str, Outcome], tuple[Counter[str], int]] = {}
    for kb in (small, large):
        for expected in (Outcome.INDEXED, Outcome.UNCHANGED):
            counter.reset()
            report = await ingest_files(kb, [path], **options)
            [result] = report.results
            assert result.outcome is expected
            cost[kb.collection, expected] = (Counter(counter.calls), counter.payloads)

    for outcome in (Outcome.INDEXED, Outcome.UNCHANGED):
        assert cost["small", outcome] == cost["large", outcome]
        calls, payloads = cost["large", outcome]
        assert payloads <= 1  # at most the looked-up document's first chunk
        assert "facet" not in calls and "scroll" not in calls
    [summary] = [s for s in await large.list_documents() if s.source == "birds.txt"]
    assert await large.get_document(summary.document_id) == summary
    assert summary.chunk_count > 1
