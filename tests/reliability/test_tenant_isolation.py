"""Tenant isolation: a seeded random walk of 10,000 operations per store kind over eight tenant
handles sharing one collection, checked step by step against a Python model.

The tenants' filter values are chosen to be confusable: "1" / 1 / True, "0" / 0 / False, "a",
and None, the "no tenant" scope (records without the key), which must never see, replace or
delete a tenant's record of the same document id.
Document ids come from a small shared pool, so tenants constantly write the same ids. Chunks
and document metadata often carry forged `tenant` values of another tenant (of another type,
too). After every operation the handle's answer must equal the model's: search hits, pages of
chunks, listed documents, NotFound for ids outside its scope; every 500 steps every handle's
whole view is compared and `verify()` must report nothing incomplete.

`ARCHIVIST_ISOLATION_SEED` / `ARCHIVIST_ISOLATION_STEPS` change the walk (defaults 7 / 10,000).
The fast test set walks a tenth of the steps; the full walk is marked `heavy`.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.knowledge.knowledge_base import DocumentNotFoundError, KnowledgeBase
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.embedding import HashEmbeddingModel

SEED = int(os.environ.get("ARCHIVIST_ISOLATION_SEED", "7"))
STEPS = int(os.environ.get("ARCHIVIST_ISOLATION_STEPS", "10000"))
CHECK_EVERY = 500
DIMENSIONS = 16
COLLECTION = "shared"
TENANTS: list[Any] = ["1", 1, True, "0", 0, False, "a", None]
DOCUMENT_IDS = [f"doc-{i}" for i in range(8)]


# Only equal texts are alike (each text hashed whole), so a leak shows as a perfect match.
HashEmbedder = partial(
    HashEmbeddingModel, DIMENSIONS, model="hash-embedder", whole_text=True, lowercase=False
)


@dataclass
class ModelDocument:
    source: str
    texts: list[str]
    metadata: list[dict[str, Any]]
    """Per chunk, as stored: document metadata, then chunk metadata, then the filter."""


Model = dict[int, dict[str, ModelDocument]]
"""tenant index -> document id -> what that tenant's handle must see."""


def same(a: Any, b: Any) -> bool:
    """Equal with equal types all the way down (True is not 1, "1" is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class Walk:
    def __init__(self, rng: random.Random, label: str) -> None:
        self.rng = rng
        self.label = label
        self.model: Model = {t: {} for t in range(len(TENANTS))}
        self.counter = 0
        self.step = 0
        self.counts: dict[str, int] = {}

    def handles(self, store: QdrantStore) -> list[KnowledgeBase]:
        embedder = HashEmbedder()
        return [
            KnowledgeBase(f"t{t}", "tenant", embedder, store, COLLECTION, {"tenant": value})
            for t, value in enumerate(TENANTS)
        ]

    def where(self) -> str:
        return f"[{self.label} step {self.step}]"

    def forged(self, tenant: int) -> dict[str, Any]:
        """Metadata that may claim another tenant (any type) or carry lookalike keys."""
        roll = self.rng.random()
        if roll < 0.5:
            return {"tenant": self.rng.choice([v for i, v in enumerate(TENANTS) if i != tenant])}
        if roll < 0.6:
            return {"tenant": None, "Tenant": TENANTS[tenant]}
        if roll < 0.7:
            return {"tenant": [TENANTS[tenant]], "document_id": self.rng.choice(DOCUMENT_IDS)}
        return {}

    def new_document(self, tenant: int) -> tuple[list[Chunk], dict[str, Any], ModelDocument]:
        n = self.rng.randint(1, 4)
        self.counter += 1
        source = f"t{tenant}-v{self.counter}.txt"
        texts = [
            f"tenant {tenant} text {self.counter}.{i} {self.rng.random():.6f}" for i in range(n)
        ]
        document_metadata = {"kind": self.rng.choice(["a", "b"]), **self.forged(tenant)}
        chunks = []
        stored = []
        for i, text in enumerate(texts):
            own = {"part": i, **self.forged(tenant)}
            chunks.append(
                Chunk(
                    content=TextBlock(text=text),
                    source=source,
                    chunk_index=i,
                    total_chunks=n,
                    metadata=own,
                )
            )
            merged = {**document_metadata, **own, "tenant": TENANTS[tenant]}
            if TENANTS[tenant] is None:  # the "no tenant" scope strips the key on write
                del merged["tenant"]
            stored.append(merged)
        return chunks, document_metadata, ModelDocument(source, texts, stored)

    def check_chunk(self, tenant: int, document_id: str, chunk: Chunk) -> None:
        expected = self.model[tenant].get(document_id)
        assert expected is not None, f"{self.where()} t{tenant} sees foreign {document_id!r}"
        i = chunk.chunk_index
        assert isinstance(chunk.content, TextBlock)
        assert chunk.content.text == expected.texts[i], self.where()
        assert same(chunk.metadata, expected.metadata[i]), (self.where(), chunk.metadata)
        assert chunk.total_chunks == len(expected.texts) and chunk.source == expected.source

    async def check_view(self, tenant: int, kb: KnowledgeBase) -> None:
        documents = await kb.list_documents()
        expected = self.model[tenant]
        assert [d.document_id for d in documents] == sorted(expected), self.where()
        for summary in documents:
            want = expected[summary.document_id]
            assert summary.chunk_count == len(want.texts), self.where()
            assert summary.source == want.source, self.where()
            assert same(summary.metadata, want.metadata[0]), self.where()

    async def check_all(self, kbs: list[KnowledgeBase]) -> None:
        for tenant, kb in enumerate(kbs):
            await self.check_view(tenant, kb)
            report = await kb.verify()
            assert report.ok and report.documents_checked == len(self.model[tenant]), report

    async def run(self, kbs: list[KnowledgeBase], steps: int) -> None:
        for _ in range(steps):
            self.step += 1
            tenant = self.rng.randrange(len(TENANTS))
            await self.operate(tenant, kbs[tenant])
            if self.step % CHECK_EVERY == 0:
                await self.check_all(kbs)

    async def operate(self, tenant: int, kb: KnowledgeBase) -> None:
        rng = self.rng
        mine = self.model[tenant]
        op = rng.choices(
            ["insert", "reinsert", "search", "list", "chunks", "delete"],
            weights=[18, 14, 22, 12, 20, 14],
        )[0]
        if op == "reinsert" and not mine:
            op = "insert"
        self.counts[op] = self.counts.get(op, 0) + 1
        if op in ("insert", "reinsert"):
            pool = sorted(mine) if op == "reinsert" else DOCUMENT_IDS
            document_id = rng.choice(pool)
            chunks, document_metadata, expected = self.new_document(tenant)
            returned = await kb.insert_document(chunks, document_id, document_metadata)
            assert returned == document_id
            mine[document_id] = expected
        elif op == "search":
            own = [(d, t) for d, doc in mine.items() for t in doc.texts]
            everyone = [t for m in self.model.values() for doc in m.values() for t in doc.texts]
            if own and rng.random() < 0.5:
                query_doc, query = rng.choice(own)
            elif everyone:
                query_doc, query = None, rng.choice(everyone)  # often another tenant's text
            else:
                query_doc, query = None, "nothing at all"
            hits = await kb.search(query, top_k=rng.randint(1, 12))
            for hit in hits:
                self.check_chunk(tenant, hit.document_id, hit.chunk)
            own_chunks = sum(len(d.texts) for d in mine.values())
            assert len(hits) <= own_chunks, self.where()
            if query_doc is not None:
                top = hits[0]
                assert top.document_id == query_doc, self.where()
                assert isinstance(top.chunk.content, TextBlock) and top.chunk.content.text == query
            elif not own_chunks:
                assert hits == [], self.where()
        elif op == "list":
            await self.check_view(tenant, kb)
        elif op == "chunks":
            document_id = rng.choice(DOCUMENT_IDS)
            offset, limit = rng.randint(0, 2), rng.randint(1, 5)
            page = await kb.list_chunks(document_id, offset=offset, limit=limit)
            expected = mine.get(document_id)
            want = (
                []
                if expected is None
                else list(range(len(expected.texts)))[offset : offset + limit]
            )
            assert [c.chunk_index for c in page] == want, self.where()
            for chunk in page:
                self.check_chunk(tenant, document_id, chunk)
        else:
            document_id = rng.choice(DOCUMENT_IDS)
            if document_id in mine:
                await kb.delete_document(document_id)
                del mine[document_id]
            else:
                with pytest.raises(DocumentNotFoundError):
                    await kb.delete_document(document_id)


async def walk(store_factory: Any, label: str, steps: int, reopen_at: int | None = None) -> Walk:
    state = Walk(random.Random(f"{SEED}-{label}"), label)
    first = steps if reopen_at is None else reopen_at
    async with store_factory() as store:
        kbs = state.handles(store)
        await state.run(kbs, first)
        await state.check_all(kbs)
    if reopen_at is not None:  # the same data, a new process's view of it
        async with store_factory() as store:
            kbs = state.handles(store)
            await state.check_all(kbs)
            await state.run(kbs, steps - first)
            await state.check_all(kbs)
    async with store_factory() as store:
        admin = KnowledgeBase("admin", "all", HashEmbedder(), store, COLLECTION)
        everyone = sorted({d for m in state.model.values() for d in m})
        assert [d.document_id for d in await admin.list_documents()] == everyone
    assert min(state.counts.values()) > steps // 20, state.counts
    return state


# The fast set walks a tenth of the way; the full walk is heavy (CI runs it).
WALKS = [
    pytest.param(STEPS // 10, id="short"),
    pytest.param(STEPS, id="full", marks=pytest.mark.heavy),
]


@pytest.mark.parametrize("steps", WALKS)
async def test_isolation_random_walk_in_memory(steps: int) -> None:
    store = QdrantStore(location=":memory:", auto_optimize_threshold=None)  # re-enterable
    await walk(lambda: store, "memory", steps, reopen_at=steps // 2)


class _Reopenable:
    """A `path=` store factory: each `async with` opens the directory afresh."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self) -> QdrantStore:
        return QdrantStore(path=self.path, auto_optimize_threshold=None)


@pytest.mark.parametrize("steps", WALKS)
async def test_isolation_random_walk_on_disk(tmp_path: Path, steps: int) -> None:
    await walk(_Reopenable(tmp_path / "store"), "path", steps, reopen_at=steps // 2)
