"""The declared store contract: `StoreCapabilities`, the shared argument checks, and a knowledge
base that asks a store only for what it declares."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import ValidationError
from test_minimal_store import MinimalStore

from archivist.embedding import EmbeddingModelBase
from archivist.embedding.relevance import UNCALIBRATED
from archivist.embedding.response import EmbeddingResponse
from archivist.message import TextBlock
from archivist.rag import Chunk, KnowledgeBase
from archivist.rag.record import VectorSearchResult
from archivist.rag.store import StoreCapabilities
from archivist.rag.store.core.arguments import SearchArguments, check_search, matches_filter
from archivist.rag.store.search_filter import SearchFilter

VECTOR = [1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"top_k": 0}, "top_k"),
        ({"mode": "bm25"}, "mode must be one of"),
        ({"diversity": 1.5}, "from 0 to 1"),
        ({"diversity": 0.5, "mode": "sparse", "query_text": "x"}, "needs dense vectors"),
        ({"diversity": 0.5, "max_per_document": 1}, "cannot be combined"),
        ({"max_per_document": 0}, "max_per_document"),
        ({"mode": "hybrid"}, "query_text"),
        ({"mode": "sparse", "query_text": "  "}, "query_text"),
        ({"vector": None}, "query_vector"),
        ({"metadata_filter": {"k": 1.5}}, "'k'"),
        ({"collection": ".."}, "collection name"),
    ],
)
def test_check_search_names_the_bad_argument(arguments: dict[str, Any], message: str) -> None:
    call: dict[str, Any] = {"collection": "docs", "vector": VECTOR, "top_k": 3, **arguments}
    with pytest.raises(ValueError, match=message):
        check_search(call.pop("collection"), call.pop("vector"), call.pop("top_k"), **call)


def test_check_search_rejects_a_search_filter_of_the_wrong_kind() -> None:
    with pytest.raises(TypeError, match="search_filter must be a SearchFilter"):
        check_search("docs", VECTOR, 3, search_filter={"paths": ["*.md"]})


def test_check_search_drops_an_empty_search_filter() -> None:
    checked = check_search(
        "docs", None, 3, mode="sparse", query_text="x", search_filter=SearchFilter()
    )
    assert checked == SearchArguments(
        collection="docs",
        top_k=3,
        metadata_filter=None,
        query_text="x",
        mode="sparse",
        diversity=None,
        max_per_document=None,
        search_filter=None,
    )


def test_capabilities_default_to_the_minimal_store_and_are_frozen() -> None:
    minimal = StoreCapabilities()
    assert minimal.ordered_modes() == ("dense",)
    assert not minimal.search_options
    assert StoreCapabilities(relevance=True).search_options
    assert StoreCapabilities(search_modes=frozenset({"dense", "sparse"})).search_options
    with pytest.raises(ValidationError):
        minimal.diversity = True  # type: ignore[misc]
    with pytest.raises(ValidationError, match="dense"):
        StoreCapabilities(search_modes=frozenset({"sparse"}))
    with pytest.raises(ValidationError):
        StoreCapabilities(atomic=True)  # type: ignore[call-arg]


def test_undeclared_search_options_are_refused_naming_the_store() -> None:
    offered = StoreCapabilities(relevance=True)
    offered.refuse_undeclared(check_search("docs", VECTOR, 3), "MyStore")
    for asked, what in (
        ({"diversity": 0.3}, "diversity"),
        ({"max_per_document": 2}, "max_per_document"),
        ({"mode": "hybrid", "query_text": "x"}, "hybrid search"),
        ({"search_filter": SearchFilter(types=["md"])}, "search filters"),
    ):
        with pytest.raises(ValueError, match=f"MyStore does not support {what}"):
            offered.refuse_undeclared(check_search("docs", VECTOR, 3, **asked), "MyStore")


class HashEmbedding(EmbeddingModelBase):
    """Bag of hashed words in 4 dimensions."""

    def __init__(self) -> None:
        super().__init__(model="hash-words", dimensions=4)

    async def _call_api(self, inputs: list[Any]) -> EmbeddingResponse:
        vectors = []
        for text in inputs:
            vector = [0.01] * 4
            for word in str(text).lower().split():
                vector[hashlib.sha256(word.encode()).digest()[0] % 4] += 1.0
            vectors.append(vector)
        return EmbeddingResponse(embeddings=vectors)


class RecordingStore(MinimalStore):
    """The minimal store declaring relevance, so it takes the whole signature; it records
    what each search was asked."""

    capabilities = StoreCapabilities(relevance=True, scoped_delete=True)

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[dict[str, Any]] = []

    async def delete(  # type: ignore[override]
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> None:
        rows = self._collections.get(collection, (0, {}))[1]
        for key, row in list(rows.items()):
            if key[0] == document_id and matches_filter(row.chunk.metadata, metadata_filter):
                del rows[key]

    async def search(  # type: ignore[override]
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
        **options: Any,
    ) -> list[VectorSearchResult]:
        self.asked.append(options)
        return await super().search(collection, query_vector, top_k, metadata_filter)


@pytest.fixture
async def recording() -> AsyncIterator[RecordingStore]:
    async with RecordingStore() as opened:
        yield opened


def knowledge(store: MinimalStore, scope: dict[str, Any] | None = None) -> KnowledgeBase:
    return KnowledgeBase(
        name="kb",
        description="capabilities",
        embedding_model=HashEmbedding(),
        vector_store=store,
        collection="docs",
        metadata_filter=scope,
    )


def chunks(*texts: str) -> list[Chunk]:
    return [
        Chunk(content=TextBlock(text=t), source="a.md", chunk_index=i, total_chunks=len(texts))
        for i, t in enumerate(texts)
    ]


async def test_a_store_with_search_options_is_given_the_query_text(
    recording: RecordingStore,
) -> None:
    kb = knowledge(recording)
    await kb.insert_document(chunks("cats purr", "dogs bark"), "pets")
    [hit, *_] = await kb.search("cats purr", top_k=2)
    assert hit.chunk.chunk_index == 0
    assert recording.asked == [
        {
            "query_text": "cats purr",
            "mode": "dense",
            "diversity": None,
            "max_per_document": None,
            "search_filter": None,
            # the embedding model's curves for the query's script (this model has none fitted)
            "relevance_curves": UNCALIBRATED["alphabetic"],
        }
    ]


async def test_undeclared_capabilities_are_refused_before_the_store_is_asked(
    recording: RecordingStore,
) -> None:
    kb = knowledge(recording)
    await kb.insert_document(chunks("cats purr"), "pets")
    with pytest.raises(ValueError, match="RecordingStore does not support diversity"):
        await kb.search("cats", diversity=0.5)
    with pytest.raises(ValueError, match="RecordingStore does not support search filters"):
        await kb.search("cats", search_filter={"types": ["md"]})
    with pytest.raises(ValueError, match="supports only dense"):
        await kb.search("cats", mode="hybrid")
    with pytest.raises(ValueError, match="cannot list chunks"):
        await kb.search("cats", context=1)
    with pytest.raises(NotImplementedError, match=r"StoreCapabilities\(chunk_listing=True\)"):
        await kb.list_chunks("pets")
    with pytest.raises(NotImplementedError, match=r"StoreCapabilities\(generations=True\)"):
        await kb.verify()
    assert recording.asked == []


async def test_grouping_without_the_capability_collapses_in_the_knowledge_base(
    recording: RecordingStore,
) -> None:
    kb = knowledge(recording)
    await kb.insert_document(chunks("cats purr", "cats sleep", "cats eat"), "cats")
    await kb.insert_document(chunks("dogs bark"), "dogs")
    hits = await kb.search("cats", top_k=2, max_per_document=1)
    assert sorted(hit.document_id for hit in hits) == ["cats", "dogs"]
    assert all(asked["max_per_document"] is None for asked in recording.asked)


async def test_a_declared_scoped_delete_lets_a_scoped_handle_write_and_delete(
    recording: RecordingStore,
) -> None:
    kb = knowledge(recording, {"tenant": "a"})
    await kb.insert_document(chunks("cats purr"), "pets")
    assert [s.document_id for s in await kb.list_documents()] == ["pets"]
    await kb.delete_document("pets")
    assert await kb.list_documents() == []


def test_a_declaration_of_the_wrong_kind_or_the_former_style_is_refused() -> None:
    with pytest.raises(TypeError, match="capabilities must be a StoreCapabilities, not dict"):

        class Loose(MinimalStore):
            capabilities = {"diversity": True}  # type: ignore[assignment]

    with pytest.raises(TypeError, match=r"StoreCapabilities\(diversity=True\)"):

        class Former(MinimalStore):
            supports_diversity = True
