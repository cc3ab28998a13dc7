"""QdrantStore over qdrant-client, the code path of `url=` (a Qdrant server or cluster).

No Qdrant server can run here, so the suite drives `QdrantStore.from_client` with qdrant-client's
local mode, `AsyncQdrantClient(location=":memory:")`, as the stand-in for a server: the same
client API and calls as against a server, a different engine behind them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from qdrant_cases import QdrantOnlyCases
from qdrant_client import AsyncQdrantClient

from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.hybrid_store import DiversitySearchConformance, HybridSearchConformance
from archivist.testing.search_store import GroupingConformance, SearchFilterConformance
from archivist.testing.store import DIMENSIONS, VectorStoreConformance, record, unit

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
    VectorStoreConformance,
    HybridSearchConformance,
    DiversitySearchConformance,
    GroupingConformance,
    SearchFilterConformance,
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
        ["document_id", "generation", "chunk_index", 'metadata."tenant"', 'metadata."page"']
    )
