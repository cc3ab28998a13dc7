"""The shared test fakes in `archivist.testing`: the hash embedding model and the store fixture."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from archivist.embedding import EmbeddingModelBase
from archivist.message import Base64Source, DataBlock, TextBlock
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.embedding import HashEmbeddingModel, token_vector
from archivist.testing.fixtures import STORE_KINDS, entered_store
from archivist.testing.store import record


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.hypot(*a) * math.hypot(*b))


async def test_equal_texts_equal_vectors_shared_words_close_unrelated_far() -> None:
    model = HashEmbeddingModel(dimensions=64)
    assert isinstance(model, EmbeddingModelBase)
    a, again, near, far = (
        await model(
            [
                "Tenants are kept apart",
                TextBlock(text="tenants ARE kept apart"),
                "tenants apart",
                "zebra",
            ]
        )
    ).embeddings
    assert a == again  # case folds, TextBlock and str embed alike
    assert len(a) == 64
    assert cosine(a, near) > 0.5 > abs(cosine(a, far))
    assert (await HashEmbeddingModel(dimensions=64)(["zebra"])).embeddings == [far]


async def test_whole_text_mode_separates_texts_sharing_words() -> None:
    model = HashEmbeddingModel(dimensions=64, whole_text=True)
    one, two = (await model(["chunk 1 of d1", "chunk 2 of d1"])).embeddings
    assert abs(cosine(one, two)) < 0.5
    assert one == token_vector("chunk 1 of d1", 64)


async def test_cjk_characters_are_tokens_and_long_vectors_are_not_repeats() -> None:
    model = HashEmbeddingModel(dimensions=200)
    assert model.tokens("租户隔离 tenant") == ["租", "户", "隔", "离", "tenant"]
    [vector] = (await model(["租户"])).embeddings
    assert len(vector) == 200 and vector[:64] != vector[64:128]
    assert model.tokens("!!!") == ["!!!"]  # no word characters: still a vector


async def test_multimodal_only_when_asked() -> None:
    image = DataBlock(source=Base64Source(media_type="image/png", data="iVBORw0KGgo="))
    with pytest.raises(ValueError, match="embeds text only"):
        await HashEmbeddingModel()([image])
    [vector] = (await HashEmbeddingModel(dimensions=8, multimodal=True)([image])).embeddings
    assert len(vector) == 8


async def test_the_store_fixture_is_an_entered_memory_store(store: QdrantStore) -> None:
    await store.create_collection("docs", 4)
    await store.insert("docs", [record("d", 0)])
    assert [s.document_id for s in await store.list_documents("docs")] == ["d"]


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_entered_store_opens_every_kind(kind: str, tmp_path: Path) -> None:
    async with entered_store(kind, tmp_path) as opened:  # type: ignore[arg-type]
        await opened.create_collection("docs", 4)
        await opened.insert("docs", [record("d", 0)])
        assert [s.document_id for s in await opened.list_documents("docs")] == ["d"]
    if kind == "edge-path":
        assert (tmp_path / "store").is_dir()
    with pytest.raises(ValueError, match="unknown store kind"):
        async with entered_store("nope"):  # type: ignore[arg-type]
            pass
