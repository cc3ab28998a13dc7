"""The `stores` benchmark's drivers for the systems that are not Archivist; imports nothing
from `archivist`, and each system's package only inside its own driver.

    python stores_peers.py SYSTEM PARAMS_JSON

SYSTEM is one of
  engine-raw   Qdrant Edge itself (`qdrant_edge`, the project's venv): the engine's raw write
               rate beside Archivist's
  pgvector-raw pgvector itself, a table and indexes like PgVectorStore's on the same server
               (the project's venv)
  chroma       chromadb `PersistentClient` (`.venv-peers`)
  lancedb      lancedb, IVF_PQ + bitmap index rebuilt at each checkpoint (`.venv-peers`)
  agentscope   AgentScope 2.0.11's `QdrantStore(path=...)`, qdrant-client's local mode
               (`.venv-agentscope`)
PARAMS_JSON is what `bench_stores.py` passes (corpus files, steps, seconds, workdir). Prints
the JSON lines of `stores_data.measure`.
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
from collections.abc import AsyncIterator
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
)

COLLECTION = "chunks"


class EngineRaw:
    """One Qdrant Edge shard written directly: a named dense vector "dense" and a BM25 sparse
    vector "bm25" (`Modifier.Idf`, text encoded by Edge's own `Bm25`), payload tenant, text and
    document id, a keyword index on tenant. The shard's layout is Archivist's default written
    out (float16 vectors on disk with int8 copies in RAM, segments of 20,000 points each
    indexed once, one search thread), so the two differ by Archivist's code alone; the shard
    is optimized after every 20,000 points written and at each checkpoint. Hybrid: one query,
    both sides prefetched (50 each, as Archivist's depth) and fused by RRF (k=60). Its calls
    block, so concurrent clients run in threads."""

    modes = ("dense", "hybrid")
    concurrency = "threads"
    SEGMENT_POINTS = 20_000
    DEPTH = 50

    def __init__(self, root: Path) -> None:
        import qdrant_edge as edge

        self.edge = edge
        self.root = root
        self.shard: Any = None
        self.bm25 = edge.Bm25(
            edge.Bm25Config(language="english", tokenizer=edge.TokenizerType.Multilingual)
        )
        self.unoptimized = 0
        self.index_s = 0.0

    def info(self) -> dict[str, Any]:
        from importlib.metadata import version

        return {"qdrant-edge-py": version("qdrant-edge-py"), "pid": _pid()}

    async def open(self) -> None:
        edge = self.edge
        segment_kb = self.SEGMENT_POINTS * DIMENSIONS * 2 // 1024  # float16
        config = edge.EdgeConfig(
            vectors={
                "dense": edge.EdgeVectorParams(
                    size=DIMENSIONS,
                    distance=edge.Distance.Cosine,
                    on_disk=True,
                    datatype=edge.VectorStorageDatatype.Float16,
                )
            },
            sparse_vectors={"bm25": edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)},
            quantization_config=edge.ScalarQuantizationConfig(
                type=edge.ScalarType.Int8, quantile=0.99, always_ram=True
            ),
            optimizers=edge.EdgeOptimizersConfig(
                max_segment_size=segment_kb,
                indexing_threshold=segment_kb,
                prevent_unoptimized=False,
            ),
            max_search_threads=1,
        )
        self.shard = edge.EdgeShard.create(str(self.root / "shard"), config)
        self.shard.update(
            edge.UpdateOperation.create_field_index("tenant", edge.PayloadSchemaType.Keyword)
        )

    async def write(self, batch: Batch) -> None:
        edge = self.edge
        points = [
            edge.Point(
                int(chunk),
                {"dense": vector, "bm25": self.bm25.embed_document(text)},
                {"tenant": tenant, "text": text, "document_id": document},
            )
            for chunk, vector, text, tenant, document in zip(
                batch.ids.tolist(),
                batch.vectors.tolist(),
                batch.texts,
                batch.tenants,
                batch.documents,
                strict=True,
            )
        ]
        self.shard.update(edge.UpdateOperation.upsert_points(points))
        self.unoptimized += len(batch)
        if self.unoptimized >= self.SEGMENT_POINTS:
            self._optimize()

    def _optimize(self) -> None:
        started = time.perf_counter()
        if self.shard.optimize():
            self.shard.flush()
        self.unoptimized = 0
        self.index_s += time.perf_counter() - started

    async def optimize(self) -> dict[str, float]:
        before = self.index_s
        self._optimize()
        during_writes, self.index_s = before, 0.0
        return {"index_s_during_writes": during_writes}

    def _tenant(self, tenant: str) -> Any:
        edge = self.edge
        return edge.Filter(must=[edge.FieldCondition(key="tenant", match=edge.MatchValue(tenant))])

    async def search(self, vector: np.ndarray, text: str, tenant: str, mode: str) -> list[int]:
        edge = self.edge
        where = self._tenant(tenant)
        dense = edge.Query.Nearest(vector.tolist(), using="dense")
        if mode == "dense":
            request = edge.QueryRequest(limit=TOP_K, query=dense, filter=where, with_payload=True)
        else:
            sparse = edge.Query.Nearest(self.bm25.embed_query(text), using="bm25")
            request = edge.QueryRequest(
                limit=TOP_K,
                prefetches=[
                    edge.Prefetch(limit=self.DEPTH, query=dense, filter=where),
                    edge.Prefetch(limit=self.DEPTH, query=sparse, filter=where),
                ],
                query=edge.Fusion.Rrf(k=60),
                filter=where,
                with_payload=True,
            )
        return [int(point.id) for point in self.shard.query(request)]

    async def disk_mb(self) -> float:
        return disk_mb(self.root)

    async def memory(self) -> dict[str, float]:
        return {}

    async def close(self) -> None:
        if self.shard is not None:
            self.shard.close()


class Chroma:
    """chromadb's embedded `PersistentClient`; one collection (cosine), metadata tenant,
    document id and chunk index, the text as the document; tenant by `where`. Chroma's API
    has no optimize call. Dense only; its calls block, so concurrent clients run in threads."""

    modes = ("dense",)
    concurrency = "threads"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.collection: Any = None

    def info(self) -> dict[str, Any]:
        import chromadb

        return {"chromadb": chromadb.__version__, "pid": _pid()}

    async def open(self) -> None:
        import chromadb

        client = chromadb.PersistentClient(
            path=str(self.root / "chroma"),
            settings=chromadb.Settings(anonymized_telemetry=False),
        )
        self.collection = client.create_collection(
            COLLECTION, configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
        )

    async def write(self, batch: Batch) -> None:
        self.collection.add(
            ids=[str(i) for i in batch.ids.tolist()],
            embeddings=batch.vectors,
            documents=batch.texts,
            metadatas=[
                {"tenant": tenant, "document_id": document, "chunk_index": index}
                for tenant, document, index in zip(
                    batch.tenants, batch.documents, batch.chunk_indexes, strict=True
                )
            ],
        )

    async def optimize(self) -> dict[str, float]:
        return {}

    async def search(self, vector: np.ndarray, text: str, tenant: str, mode: str) -> list[int]:
        found = self.collection.query(
            query_embeddings=vector[None, :], n_results=TOP_K, where={"tenant": tenant}
        )
        return [int(i) for i in found["ids"][0]]

    async def disk_mb(self) -> float:
        return disk_mb(self.root)

    async def memory(self) -> dict[str, float]:
        return {}

    async def close(self) -> None:
        self.collection = None


class LanceDB:
    """lancedb's embedded table: rows added per batch; at each checkpoint `optimize()`
    (compaction, versions older than now pruned so the disk holds the live table only), then
    an IVF_PQ vector index (cosine, lancedb's default partitions and sub-vectors) and a bitmap
    index on tenant rebuilt over every row. Search prefilters by tenant, lancedb's default
    probes, no refine step. Dense only; its calls block, so concurrent clients run in
    threads."""

    modes = ("dense",)
    concurrency = "threads"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.db: Any = None
        self.table: Any = None

    def info(self) -> dict[str, Any]:
        import lancedb
        import pyarrow

        return {"lancedb": lancedb.__version__, "pyarrow": pyarrow.__version__, "pid": _pid()}

    async def open(self) -> None:
        import lancedb

        warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
        self.db = lancedb.connect(str(self.root / "lance"))

    async def write(self, batch: Batch) -> None:
        import pyarrow as pa

        rows = pa.table(
            {
                "id": pa.array(batch.ids, pa.int64()),
                "tenant": batch.tenants,
                "document_id": batch.documents,
                "chunk_index": pa.array(batch.chunk_indexes, pa.int32()),
                "text": batch.texts,
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(batch.vectors.ravel(), pa.float32()), DIMENSIONS
                ),
            }
        )
        if self.table is None:
            self.table = self.db.create_table(COLLECTION, data=rows)
        else:
            self.table.add(rows)

    async def optimize(self) -> dict[str, float]:
        from datetime import timedelta

        from lancedb.index import Bitmap, IvfPq

        started = time.perf_counter()
        self.table.optimize(cleanup_older_than=timedelta(0))
        compacted = time.perf_counter()
        self.table.create_index("vector", config=IvfPq(distance_type="cosine"), replace=True)
        indexed = time.perf_counter()
        self.table.create_index("tenant", config=Bitmap(), replace=True)
        return {
            "compact_s": compacted - started,
            "vector_index_s": indexed - compacted,
            "scalar_index_s": time.perf_counter() - indexed,
        }

    async def search(self, vector: np.ndarray, text: str, tenant: str, mode: str) -> list[int]:
        found = (
            self.table.search(vector, vector_column_name="vector")
            .where(f"tenant = '{tenant}'", prefilter=True)
            .limit(TOP_K)
            .select(["id", "document_id", "chunk_index", "text", "_distance"])
            .to_arrow()
        )
        return [int(i) for i in found.column("id").to_pylist()]

    async def disk_mb(self) -> float:
        return disk_mb(self.root)

    async def memory(self) -> dict[str, float]:
        return {}

    async def close(self) -> None:
        self.table = None


class AgentScope:
    """AgentScope 2.0.11's `QdrantStore(path=...)` (qdrant-client's local mode, on disk):
    `insert` per batch, `search` with `metadata_filter={"tenant_id": ...}`; no optimize in its
    API. Dense only."""

    modes = ("dense",)

    def __init__(self, root: Path) -> None:
        self.root = root
        self.store: Any = None

    def info(self) -> dict[str, Any]:
        return {
            "agentscope": _version("agentscope"),
            "qdrant-client": _version("qdrant-client"),
            "pid": _pid(),
        }

    async def open(self) -> None:
        from agentscope.rag import QdrantStore

        warnings.filterwarnings("ignore", message=r".*Local mode is not recommended.*")
        self.store = QdrantStore(path=str(self.root / "qdrant"))
        await self.store.__aenter__()
        await self.store.create_collection(COLLECTION, dimensions=DIMENSIONS)

    async def write(self, batch: Batch) -> None:
        from agentscope.message import TextBlock
        from agentscope.rag import Chunk, VectorRecord

        await self.store.insert(
            COLLECTION,
            [
                VectorRecord(
                    vector=vector,
                    document_id=document,
                    chunk=Chunk(
                        content=TextBlock(text=text),
                        source=f"{document}.txt",
                        chunk_index=index,
                        total_chunks=CHUNKS_PER_DOCUMENT,
                        metadata={"tenant_id": tenant},
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
            ],
        )

    async def optimize(self) -> dict[str, float]:
        return {}

    async def search(self, vector: np.ndarray, text: str, tenant: str, mode: str) -> list[int]:
        hits = await self.store.search(
            COLLECTION, vector.tolist(), top_k=TOP_K, metadata_filter={"tenant_id": tenant}
        )
        return [chunk_number(hit.document_id, hit.chunk.chunk_index) for hit in hits]

    async def disk_mb(self) -> float:
        return disk_mb(self.root)

    async def memory(self) -> dict[str, float]:
        return {}

    async def close(self) -> None:
        if self.store is not None:
            await self.store.__aexit__(None, None, None)


def chunk_number(document_id: str, chunk_index: int) -> int:
    """Chunk i is chunk i % 10 of document "d{i // 10}"."""
    return int(document_id.removeprefix("d")) * CHUNKS_PER_DOCUMENT + chunk_index


def _pid() -> int:
    import os

    return os.getpid()


class PgVectorRaw:
    """pgvector itself on the same server as `PgVectorStore` (`stores_pgserver`): a table of
    the same chunk columns (vectors as `halfvec`, as PgVectorStore keeps them by default) and
    indexes written by binary COPY, each index kept up to date by every write (primary key,
    document, GIN metadata, HNSW m=16 ef_construction=100), with
    PostgreSQL's own full-text search (a stored `tsvector` and its GIN index) for the lexical
    side. Dense search: pgvector's defaults with iterative scans; hybrid: RRF of both sides'
    best 50 in one statement. One connection; `prepare_clients` opens one per concurrent
    client."""

    modes = ("dense", "hybrid")
    DEPTH = 50

    def __init__(self, root: Path) -> None:
        from stores_pgserver import PgServer

        self.root = root
        self.server = PgServer(root)
        self.connection: Any = None
        self.spare: list[Any] = []
        """Connections of the concurrent clients, each taken by one call at a time."""

    def info(self) -> dict[str, Any]:
        return {"pgvector-python": _version("pgvector"), **self.server.settings()}

    async def _connect(self) -> Any:
        import psycopg
        from pgvector.psycopg import register_vector_async

        connection = await psycopg.AsyncConnection.connect(self.server.url, autocommit=True)
        await connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await register_vector_async(connection)
        return connection

    async def prepare_clients(self, clients: int) -> None:
        self.spare += [await self._connect() for _ in range(clients)]

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        """The connection for one call: the measurement's own, or a spare one under load."""
        if not self.spare:
            yield self.connection
            return
        connection = self.spare.pop()
        try:
            yield connection
        finally:
            self.spare.append(connection)

    async def open(self) -> None:
        self.server.start()
        self.connection = await self._connect()
        for statement in (
            f"""CREATE TABLE chunks (
                id uuid PRIMARY KEY, document_id text NOT NULL, chunk_index integer NOT NULL,
                content text NOT NULL, metadata jsonb NOT NULL,
                embedding halfvec({DIMENSIONS}) NOT NULL,
                tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED)""",
            "ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN",
            "CREATE INDEX chunks_doc ON chunks (document_id, chunk_index)",
            "CREATE INDEX chunks_meta ON chunks USING gin (metadata jsonb_path_ops)",
            "CREATE INDEX chunks_hnsw ON chunks USING hnsw (embedding halfvec_cosine_ops) "
            "WITH (m = 16, ef_construction = 100)",
            "CREATE INDEX chunks_tsv ON chunks USING gin (tsv)",
        ):
            await self.connection.execute(statement)

    async def write(self, batch: Batch) -> None:
        import uuid

        from pgvector import HalfVector
        from psycopg.types.json import Jsonb

        statement = (
            "COPY chunks (id, document_id, chunk_index, content, metadata, embedding) "
            "FROM STDIN (FORMAT BINARY)"
        )
        async with self._connection() as connection, connection.cursor().copy(statement) as copy:
            copy.set_types(["uuid", "text", "int4", "text", "jsonb", "halfvec"])
            for chunk, vector, text, tenant, document, index in zip(
                batch.ids.tolist(),
                batch.vectors,
                batch.texts,
                batch.tenants,
                batch.documents,
                batch.chunk_indexes,
                strict=True,
            ):
                await copy.write_row(
                    (
                        uuid.UUID(int=chunk),
                        document,
                        index,
                        text,
                        Jsonb({"tenant": tenant}),
                        HalfVector(vector),
                    )
                )

    async def optimize(self) -> dict[str, float]:
        await self.connection.execute("ANALYZE chunks")
        return {}

    async def search(self, vector: np.ndarray, text: str, tenant: str, mode: str) -> list[int]:
        from pgvector import HalfVector
        from psycopg.types.json import Jsonb

        where = Jsonb({"tenant": tenant})
        query = HalfVector(vector)
        dense = "SELECT id FROM chunks WHERE metadata @> %s ORDER BY embedding <=> %s LIMIT %s"
        async with self._connection() as connection, connection.transaction():
            await connection.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            if mode == "dense":
                cursor = await connection.execute(dense, [where, query, TOP_K])
            else:
                # Any query word (PostgreSQL's plainto_tsquery asks for all of them).
                cursor = await connection.execute(
                    f"""WITH q AS (SELECT replace(plainto_tsquery('simple', %s)::text, '&', '|')
                            ::tsquery AS q),
                        d AS (SELECT id, row_number() OVER () AS r FROM ({dense}) x),
                        s AS (SELECT id, row_number() OVER (ORDER BY rank DESC) AS r FROM (
                            SELECT c.id, ts_rank_cd(c.tsv, q.q) AS rank FROM chunks c, q
                            WHERE c.tsv @@ q.q AND c.metadata @> %s
                            ORDER BY rank DESC LIMIT %s) y)
                    SELECT id FROM (SELECT id, 1.0 / (60 + r) AS f FROM d
                        UNION ALL SELECT id, 1.0 / (60 + r) FROM s) z
                    GROUP BY id ORDER BY sum(f) DESC, id LIMIT %s""",
                    [text, where, query, self.DEPTH, where, self.DEPTH, TOP_K],
                )
            return [chunk.int for (chunk,) in await cursor.fetchall()]

    async def disk_mb(self) -> float:
        return self.server.disk_mb()

    async def memory(self) -> dict[str, Any]:
        return self.server.memory()

    async def close(self) -> None:
        try:
            for connection in [self.connection, *self.spare]:
                if connection is not None:
                    await connection.close()
        finally:
            self.server.stop()


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


DRIVERS = {
    "engine-raw": EngineRaw,
    "pgvector-raw": PgVectorRaw,
    "chroma": Chroma,
    "lancedb": LanceDB,
    "agentscope": AgentScope,
}

if __name__ == "__main__":
    driver_main(DRIVERS, sys.argv[1:])
