"""The seed's KnowledgeBase, metadata_filter, multimodal and custom-store samples, verbatim
with agentscope → archivist. DashScope runs against a loopback stand-in of its API."""

from pathlib import Path
from typing import Any

import pytest

from archivist.embedding import EmbeddingModelBase, LocalEmbeddingModel
from dashscope_loopback import dashscope_loopback


@pytest.fixture(scope="module")
def local_model() -> EmbeddingModelBase:
    return LocalEmbeddingModel()


async def _seed_chunks() -> list[Any]:
    from archivist.rag import ApproxTokenChunker, TextParser

    sections = await TextParser().parse(
        file=b"# Cats\nCats sleep 12-16 hours per day.\n", filename="cats.md"
    )
    chunker = ApproxTokenChunker(chunk_size=256, overlap=32)
    return await chunker.chunk(sections)


async def test_seed_knowledge_samples_on_dashscope_loopback(
    local_model: EmbeddingModelBase,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    chunks = await _seed_chunks()
    with dashscope_loopback(local_model) as (base_url, requests):
        monkeypatch.setenv("DASHSCOPE_BASE_URL", base_url)

        from archivist.credential import DashScopeCredential
        from archivist.embedding import DashScopeEmbeddingModel
        from archivist.rag import KnowledgeBase, QdrantStore

        embedding_model = DashScopeEmbeddingModel(
            credential=DashScopeCredential(api_key="YOUR_API_KEY"),
            model="text-embedding-v4",
            dimensions=1024,
        )

        # QdrantStore 是一个 async context manager；进入时打开客户端连接
        store = QdrantStore(location=":memory:")  # 或 url="http://..." 指向真实集群

        async with store:
            knowledge = KnowledgeBase(
                name="demo-kb",
                description="A toy corpus.",
                embedding_model=embedding_model,
                vector_store=store,
                collection="demo-kb",
            )
            # backing 的 collection 会在首次操作时按 embedding_model.dimensions 自动建立
            document_id = await knowledge.insert_document(
                chunks,
                document_metadata={"filename": "cats.md"},
            )

        async with store:
            results = await knowledge.search(
                queries=["When do cats sleep?"],
                top_k=3,
                score_threshold=None,  # 仅对 cosine / dot-product 有意义
            )
            for r in results:
                print(r.score, r.document_id, r.chunk.content)

            # 列出所有文档（每个文档一个 DocumentSummary）
            summaries = await knowledge.list_documents()
            for s in summaries:
                print(s.document_id, s.source, s.chunk_count, s.metadata)

            # 按 document_id 删除整个文档对应的所有 chunk
            await knowledge.delete_document(document_id)
            assert await knowledge.list_documents() == []

    out = capsys.readouterr().out
    assert f"{document_id} cats.md 1 {{'filename': 'cats.md'}}" in out
    assert results[0].document_id == document_id and results[0].score > 0.5
    assert [r["path"] for r in requests] == [
        "/api/v1/services/embeddings/text-embedding/text-embedding"
    ] * 2
    assert requests[0]["auth"] == "Bearer YOUR_API_KEY"
    assert requests[0]["parameters"]["dimension"] == 1024
    assert [r["parameters"].get("text_type") for r in requests] == ["document", "query"]


async def test_seed_metadata_filter_and_multimodal_samples(local_model: EmbeddingModelBase) -> None:
    from archivist.rag import ImageParser, KnowledgeBase, QdrantStore, TextParser

    embedding_model = local_model
    async with QdrantStore(location=":memory:") as store:
        knowledge = KnowledgeBase(
            name="tenant-a-kb",
            description="...",
            embedding_model=embedding_model,
            vector_store=store,
            collection="shared",
            metadata_filter={"tenant_id": "tenant-a"},
        )
        await knowledge.insert_document(await _seed_chunks())
        [summary] = await knowledge.list_documents()
        assert summary.metadata == {"tenant_id": "tenant-a"}

    assert TextParser.supported_media_types == [
        "text/plain", "text/markdown", "text/csv", "text/html", "text/x-rst",
        "application/json", "application/xml", "application/x-yaml",
    ]  # fmt: skip
    assert ImageParser.supported_media_types == [
        "image/png", "image/jpeg", "image/gif", "image/bmp", "image/webp",
    ]  # fmt: skip
    assert embedding_model.supports_multimodal is False


def test_seed_custom_vector_store_skeleton_loads(tmp_path: Path) -> None:
    from archivist.rag import (
        DocumentSummary,
        VectorRecord,
        VectorSearchResult,
        VectorStoreBase,
    )

    async def connect_my_backend(*args: Any) -> Any:
        raise NotImplementedError

    class MyVectorStore(VectorStoreBase):
        async def __aenter__(self) -> "MyVectorStore":
            self._client = await connect_my_backend(...)
            return self

        async def __aexit__(self, exc_type, exc, tb) -> None:  # type: ignore[no-untyped-def]
            await self._client.close()

        async def create_collection(self, name: str, dimensions: int) -> None: ...

        async def delete_collection(self, name: str) -> None: ...

        async def has_collection(self, name: str) -> bool: ...  # type: ignore[empty-body]

        async def insert(
            self,
            collection: str,
            records: list[VectorRecord],
        ) -> None: ...

        async def delete(self, collection: str, document_id: str) -> None: ...  # type: ignore[override]

        async def search(  # type: ignore[empty-body]
            self,
            collection: str,
            query_vector: list[float],
            top_k: int = 5,
            metadata_filter: dict[str, Any] | None = None,
        ) -> list[VectorSearchResult]: ...

        async def list_documents(  # type: ignore[empty-body]
            self,
            collection: str,
            metadata_filter: dict[str, Any] | None = None,
        ) -> list[DocumentSummary]: ...

    assert isinstance(MyVectorStore(), VectorStoreBase)
