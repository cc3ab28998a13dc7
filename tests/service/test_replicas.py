"""Two indexers sharing one PostgreSQL job queue, as two service replicas do: every upload is
indexed exactly once, and a replica that stops mid-job has its jobs taken over."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from postgres_server import fresh_database

from archivist.embedding import LocalEmbeddingModel
from archivist.rag import ApproxTokenChunker, QdrantStore, default_registry
from archivist.rag.knowledge import factories
from archivist.rag.store.keyed_lock import KeyedLocks
from archivist.rag.store.tenant import tenant_scope
from archivist.service import ServiceSettings
from archivist.service.indexing.indexer import Indexer
from archivist.service.indexing.uploads import IncomingFile, new_folders, store_uploads
from archivist.service.storage import catalog
from archivist.service.storage.catalog import Status
from archivist.service.storage.database import make_engine


def texts(prefix: str, count: int) -> list[IncomingFile]:
    body = " ".join(f"{prefix} clause {n} covers leases, replicas and queues." for n in range(40))
    return [
        IncomingFile(f"{prefix}-{n}.txt", io.BytesIO(f"{n}: {body}".encode())) for n in range(count)
    ]


async def wait_all(engine, kb_id: str, timeout: float = 600) -> list[catalog.DocumentRecord]:
    for _ in range(int(timeout / 0.2)):
        documents = await asyncio.to_thread(catalog.list_documents, engine, kb_id)
        if all(d.status in (Status.READY, Status.FAILED) for d in documents):
            return documents
        await asyncio.sleep(0.2)
    raise TimeoutError("documents did not finish")


async def test_two_replicas_share_the_queue_and_take_over(
    postgres_url: str, tmp_path: Path
) -> None:
    url = fresh_database(postgres_url, "replicas")
    settings = ServiceSettings(
        home=tmp_path, database_url=url, lease_seconds=1.0, poll_seconds=0.1, workers=2
    )
    engines = [make_engine(url), make_engine(url)]  # one connection pool per "replica"
    model = LocalEmbeddingModel()
    registry = default_registry()
    chunker = ApproxTokenChunker(chunk_size=64, overlap=8)
    async with QdrantStore(path=tmp_path / "qdrant") as store:  # stands in for --qdrant-url
        replicas = [
            Indexer(settings, engine, store, model, registry, chunker, KeyedLocks())
            for engine in engines
        ]
        kb = catalog.create_kb(engines[0], "tenant", "shared", "")
        files_dir = settings.files_dir
        first = store_uploads(
            texts("first", 12),
            new_folders(kb.id, 12),
            files_dir,
            registry,
            10**8,
            tenant_scope(kb.tenant),
        )
        catalog.add_documents(engines[0], kb, first)
        for replica in replicas:
            await replica.start()
        documents = await wait_all(engines[0], kb.id)
        assert {d.status for d in documents} == {Status.READY}
        assert all(d.chunk_count > 1 for d in documents)

        # Replica 0 stops while it holds jobs; replica 1 takes them over once the leases lapse.
        await replicas[1].stop()
        second = store_uploads(
            texts("second", 6),
            new_folders(kb.id, 6),
            files_dir,
            registry,
            10**8,
            tenant_scope(kb.tenant),
        )
        catalog.add_documents(engines[0], kb, second)
        replicas[0].notify()
        for _ in range(3000):
            if replicas[0].in_flight:
                break
            await asyncio.sleep(0.01)
        assert replicas[0].in_flight, "replica 0 never started a job"
        await replicas[0].stop()
        await replicas[1].start()
        documents = await wait_all(engines[1], kb.id)
        await replicas[1].stop()

        assert len(documents) == 18
        assert {d.status for d in documents} == {Status.READY}
        handle = factories.knowledge_base(kb.profile(settings.default_profile()), store, model)
        report = await handle.verify()
        assert report.ok, report
        stored = {s.document_id: s.chunk_count for s in await handle.list_documents()}
        assert stored == {d.id: d.chunk_count for d in documents}  # each indexed exactly once
    for engine in engines:
        engine.dispose()
