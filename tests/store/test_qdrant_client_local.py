"""QdrantStore over qdrant-client, the code path of `url=` (a Qdrant server or cluster).

No Qdrant server can run here, so the suite drives `QdrantStore.from_client` with qdrant-client's
local mode, `AsyncQdrantClient(location=":memory:")`, as the stand-in for a server: the same
client API and calls as against a server, a different engine behind them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from qdrant_cases import QdrantOnlyCases
from qdrant_client import AsyncQdrantClient, models

from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant.store import TENANT_PAYLOAD_KEY
from archivist.rag.store.tenant import TENANT_KEY
from archivist.testing.hybrid_store import DiversityTests, HybridSearchTests
from archivist.testing.search_store import GroupingTests, SearchFilterTests
from archivist.testing.store import (
    DIMENSIONS,
    AtomicReplaceTests,
    ChunkListingTests,
    CollectionTests,
    DeclarationTests,
    DenseSearchTests,
    GenerationTests,
    RelevanceTests,
    ReplaceTests,
    ScopedDeleteTests,
    WriteTests,
    record,
    unit,
)

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect in the local Qdrant")


@pytest.fixture
async def client() -> AsyncIterator[AsyncQdrantClient]:
    local = AsyncQdrantClient(location=":memory:")
    yield local
    await local.close()


@pytest.fixture
async def store(client: AsyncQdrantClient) -> AsyncIterator[QdrantStore]:
    async with QdrantStore.from_client(client) as opened:
        yield opened


class TestQdrantClientLocalModeAsServerStandIn(
    CollectionTests,
    WriteTests,
    DenseSearchTests,
    ReplaceTests,
    ScopedDeleteTests,
    ChunkListingTests,
    AtomicReplaceTests,
    GenerationTests,
    RelevanceTests,
    HybridSearchTests,
    DiversityTests,
    GroupingTests,
    SearchFilterTests,
    DeclarationTests,
    QdrantOnlyCases,
):
    """Every conformance test through qdrant-client, local mode standing in for a server."""


async def test_a_client_brought_by_the_caller_stays_open(client: AsyncQdrantClient) -> None:
    async with QdrantStore.from_client(client) as store:
        await store.create_collection("docs", DIMENSIONS)
    assert await client.collection_exists("docs")


async def test_payload_indexes_are_requested_once_per_filtered_key(
    client: AsyncQdrantClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    requested: list[str] = []
    original = client.create_payload_index

    async def spy(collection_name: str, field_name: str, **kwargs: object) -> object:
        requested.append(field_name)
        return await original(collection_name, field_name, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(client, "create_payload_index", spy)
    async with QdrantStore.from_client(client) as store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", [record("a", 0, tenant="t", page=1)])
        for _ in range(3):
            await store.search("docs", unit(0), metadata_filter={"tenant": "t"})
            await store.list_documents("docs", {"tenant": "t", "page": 1})
    assert sorted(requested) == sorted(
        [
            'metadata."tenant_id"',  # made with the collection, as its tenant index
            "document_id",
            "generation",
            "chunk_index",
            'metadata."tenant"',
            'metadata."page"',
        ]
    )


class CreationCalls:
    """Records the keyword arguments of the collection and payload-index creations a client
    is asked for."""

    def __init__(self, client: AsyncQdrantClient, monkeypatch: pytest.MonkeyPatch) -> None:
        self.collections: list[dict[str, Any]] = []
        self.indexes: dict[str, Any] = {}
        create_collection = client.create_collection
        create_payload_index = client.create_payload_index

        async def collection_spy(collection_name: str, **kwargs: Any) -> bool:
            self.collections.append(kwargs)
            return await create_collection(collection_name, **kwargs)

        async def index_spy(collection_name: str, field_name: str, **kwargs: Any) -> Any:
            self.indexes[field_name] = kwargs["field_schema"]
            return await create_payload_index(collection_name, field_name, **kwargs)

        monkeypatch.setattr(client, "create_collection", collection_spy)
        monkeypatch.setattr(client, "create_payload_index", index_spy)


async def test_collections_are_laid_out_for_many_tenants_as_qdrant_advises(
    client: AsyncQdrantClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = CreationCalls(client, monkeypatch)
    async with QdrantStore.from_client(client) as store:
        await store.create_collection("shared", DIMENSIONS)
        await store.insert(
            "shared", [record("a", 0, tenant_id="t1"), record("b", 0, tenant_id="t2")]
        )
        hits = await store.search("shared", unit(0), metadata_filter={TENANT_KEY: "t2"})
        assert [hit.document_id for hit in hits] == ["b"]
    async with QdrantStore.from_client(client, tenants_only=True) as store:
        await store.create_collection("tenants", DIMENSIONS)

    shared, tenants = calls.collections
    assert shared["hnsw_config"] == models.HnswConfigDiff(payload_m=16)  # global graph kept
    assert tenants["hnsw_config"] == models.HnswConfigDiff(payload_m=16, m=0)
    assert shared["quantization_config"].scalar.type == models.ScalarType.INT8  # the default
    assert shared["vectors_config"].on_disk is True
    tenant_index = calls.indexes[f'metadata."{TENANT_KEY}"']
    assert tenant_index == models.KeywordIndexParams(
        type=models.KeywordIndexType.KEYWORD, is_tenant=True
    )


async def test_int8_quantization_keeps_the_originals_on_disk_for_rescoring(
    client: AsyncQdrantClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = CreationCalls(client, monkeypatch)
    async with QdrantStore.from_client(client, tenant_key=None) as store:  # int8 by default
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", [record("a", 0, unit(0)), record("b", 0, unit(1))])
        assert [hit.document_id for hit in await store.search("docs", unit(1), 1)] == ["b"]
    [created] = calls.collections
    assert created["vectors_config"].on_disk is True
    scalar = created["quantization_config"].scalar
    assert (scalar.type, scalar.quantile, scalar.always_ram) == (models.ScalarType.INT8, 0.99, True)
    assert created["hnsw_config"] is None  # no tenant key: Qdrant's default graph
    assert not any("tenant" in field for field in calls.indexes)
    async with QdrantStore.from_client(client, quantization=None) as store:
        await store.create_collection("unquantized", DIMENSIONS)
    assert calls.collections[-1]["quantization_config"] is None
    assert calls.collections[-1]["vectors_config"].on_disk is None


async def test_vectors_are_stored_as_float16_unless_float32_is_asked_for(
    client: AsyncQdrantClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = CreationCalls(client, monkeypatch)
    async with QdrantStore.from_client(client) as store:
        await store.create_collection("half", DIMENSIONS)
        await store.insert("half", [record("a", 0, unit(0)), record("b", 0, unit(1))])
        assert [hit.document_id for hit in await store.search("half", unit(1), 1)] == ["b"]
    async with QdrantStore.from_client(client, vector_datatype="float32") as store:
        await store.create_collection("full", DIMENSIONS)
    half, full = calls.collections
    assert half["vectors_config"].datatype == models.Datatype.FLOAT16
    assert full["vectors_config"].datatype == models.Datatype.FLOAT32


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"quantization": "int4"}, "quantization"),
        ({"vector_datatype": "bfloat16"}, "vector_datatype"),
        ({"vector_datatype": None}, "vector_datatype"),
        ({"tenant_key": ""}, "tenant_key"),
        ({"tenants_only": "yes"}, "tenants_only"),
        ({"tenants_only": True, "tenant_key": None}, "tenants_only needs a tenant_key"),
    ],
)
def test_bad_layout_options_are_rejected_by_name(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        QdrantStore(url="http://127.0.0.1:6333", **options)


def test_the_stores_tenant_key_is_the_libraries() -> None:
    assert TENANT_PAYLOAD_KEY == TENANT_KEY
