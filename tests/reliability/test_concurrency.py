"""Concurrency on one event loop: many tasks on one KnowledgeBase, and racing collection creation.

- 50 tasks insert, re-insert, delete and search at once (embedding yields between batches so
  the tasks interleave inside writes). Each task owns some document ids (its model is exact)
  and all fight over a few shared ids (the model follows the order in which the writes took
  effect). At the end: the KB's documents equal the model's, none lost or duplicated, every
  document is one whole version (verify clean, chunks equal exactly one written version).
- Many fresh KnowledgeBase handles (fresh `ensure_collection` state each, different tenant
  filter keys so payload indexes are raced too) write to a collection that does not exist yet:
  it is created exactly once and every write lands.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from archivist.embedding import EmbeddingResponse
from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.knowledge.knowledge_base import DocumentNotFoundError, KnowledgeBase
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.embedding import HashEmbeddingModel

DIMENSIONS = 16
TASKS = 50
OPS_PER_TASK = 40
SHARED_IDS = [f"shared-{i}" for i in range(4)]


class YieldingHashEmbedder(HashEmbeddingModel):
    """The shared hash embedder (each text hashed whole); every batch yields to the event loop a
    random number of times first, so concurrent tasks interleave in the middle of each other's
    writes."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(
            DIMENSIONS, model="hash-embedder", whole_text=True, lowercase=False, batch_size=2
        )
        self.rng = random.Random(seed)

    async def _embed_batch(self, batch: Sequence[Any], input_type: Any) -> EmbeddingResponse:
        for _ in range(self.rng.randint(0, 3)):
            await asyncio.sleep(0)
        return await super()._embed_batch(batch, input_type)


def version_texts(document_id: str, version: int, count: int) -> list[str]:
    return [f"{document_id} v{version} chunk {i}" for i in range(count)]


def chunks_of(texts: list[str], source: str) -> list[Chunk]:
    return [
        Chunk(content=TextBlock(text=t), source=source, chunk_index=i, total_chunks=len(texts))
        for i, t in enumerate(texts)
    ]


async def test_fifty_tasks_on_one_knowledge_base() -> None:
    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
        kb = KnowledgeBase(
            "kb",
            "busy",
            YieldingHashEmbedder(),
            store,
            "docs",
            {"tenant": "t"},
            write_batch_size=2,
        )
        expected: dict[str, list[str]] = {}
        """document id -> texts of the version that must be stored (absent: deleted)."""
        written: dict[str, list[list[str]]] = {}
        """document id -> every version ever written (search hits must be one of them)."""
        version = 0
        counts = {"insert": 0, "reinsert": 0, "delete": 0, "search": 0, "not-found": 0}

        async def insert(document_id: str, rng: random.Random) -> None:
            nonlocal version
            version += 1
            texts = version_texts(document_id, version, rng.randint(1, 7))
            written.setdefault(document_id, []).append(texts)
            counts["reinsert" if document_id in expected else "insert"] += 1
            await kb.insert_document(chunks_of(texts, f"{document_id}.txt"), document_id)
            # Runs before any other task's write of this id takes effect: the document lock
            # hands over only after this task resumes.
            expected[document_id] = texts

        async def delete(document_id: str) -> None:
            try:
                await kb.delete_document(document_id)
            except DocumentNotFoundError:
                counts["not-found"] += 1
                return
            counts["delete"] += 1
            expected.pop(document_id, None)

        async def search(rng: random.Random) -> None:
            counts["search"] += 1
            pool = [t for versions in written.values() for v in versions for t in v]
            query = rng.choice(pool) if pool else "nothing"
            for hit in await kb.search(query, top_k=rng.randint(1, 8)):
                assert isinstance(hit.chunk.content, TextBlock)
                versions = written[hit.document_id]
                assert any(
                    len(v) == hit.chunk.total_chunks
                    and v[hit.chunk.chunk_index] == hit.chunk.content.text
                    for v in versions
                )

        async def worker(task: int) -> None:
            rng = random.Random(task)
            own = [f"task-{task}-{i}" for i in range(3)]
            for _ in range(OPS_PER_TASK):
                roll = rng.random()
                document_id = rng.choice(SHARED_IDS if rng.random() < 0.3 else own)
                if roll < 0.45:
                    await insert(document_id, rng)
                elif roll < 0.65:
                    await delete(document_id)
                else:
                    await search(rng)

        await asyncio.gather(*(worker(task) for task in range(TASKS)))

        documents = await kb.list_documents()
        assert [d.document_id for d in documents] == sorted(expected)  # none lost or doubled
        for summary in documents:
            stored = await kb.list_chunks(summary.document_id, limit=100)
            texts = [c.content.text for c in stored if isinstance(c.content, TextBlock)]
            assert texts == expected[summary.document_id], summary.document_id
            assert summary.chunk_count == len(texts)
        report = await kb.verify()
        assert report.ok and report.documents_checked == len(expected), report
        assert min(counts.values()) > 20, counts
        assert counts["reinsert"] > 100, counts


@pytest.mark.parametrize("kind", ["memory", "path"])
async def test_racing_handles_create_the_collection_exactly_once(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = (
        QdrantStore(location=":memory:", auto_optimize_threshold=None)
        if kind == "memory"
        else QdrantStore(path=tmp_path / "store", auto_optimize_threshold=None)
    )
    async with store:
        engine = store._engine.backend
        created: list[str] = []
        original = engine.create_collection

        async def counting(name: str, params: Any) -> None:
            created.append(name)
            await asyncio.sleep(0)
            await original(name, params)

        monkeypatch.setattr(engine, "create_collection", counting)
        embedder = YieldingHashEmbedder(seed=1)
        handles = [
            KnowledgeBase(
                f"h{i}",
                "racer",
                embedder,
                store,
                "fresh",
                None if i % 10 == 0 else {f"key{i % 4}": f"tenant-{i}"},
            )
            for i in range(60)
        ]

        async def first_use(i: int, kb: KnowledgeBase) -> None:
            if i % 3 == 0:
                await kb.list_documents()  # reads race the creation too
            await kb.insert_document(chunks_of([f"handle {i} text"], f"h{i}.txt"), f"doc-{i}")

        await asyncio.gather(*(first_use(i, kb) for i, kb in enumerate(handles)))
        assert created == ["fresh"]
        assert await store.collection_dimensions("fresh") == DIMENSIONS
        everything = KnowledgeBase("all", "admin", embedder, store, "fresh")
        assert [d.document_id for d in await everything.list_documents()] == sorted(
            f"doc-{i}" for i in range(60)
        )
        for i, kb in enumerate(handles):
            assert [d.document_id for d in await kb.list_documents()] == (
                sorted(f"doc-{j}" for j in range(60))
                if kb.metadata_filter is None
                else [f"doc-{i}"]
            )
        assert (await everything.verify()).ok
    if kind == "path":
        shards = list((tmp_path / "store" / "collections" / "fresh").glob("shard-*"))
        assert len(shards) == 1
        async with QdrantStore(path=tmp_path / "store") as reopened:
            assert len(await reopened.list_documents("fresh")) == 60
