"""CachedEmbeddingModel: on-disk reuse of vectors, counted through stand-in requests."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from archivist.credential import DashScopeCredential, OpenAICredential
from archivist.embedding import (
    CachedEmbeddingModel,
    DashScopeEmbeddingModel,
    OpenAIEmbeddingModel,
)
from archivist.message import Base64Source, DataBlock


def openai_model(stand_in, dimensions: int = 8) -> OpenAIEmbeddingModel:
    return OpenAIEmbeddingModel(
        "text-embedding-3-small",
        dimensions,
        credential=OpenAICredential(api_key=stand_in.api_key, base_url=stand_in.base_url),
        http_client=stand_in.client(),
        batch_size=2,
    )


def input_count(stand_in) -> int:
    return sum(len(body["input"]) for body in stand_in.bodies)


async def test_a_repeated_call_makes_no_inner_request(openai_stand_in, tmp_path: Path) -> None:
    model = CachedEmbeddingModel(openai_model(openai_stand_in), tmp_path)
    texts = ["alpha", "beta", "gamma"]
    first = await model(texts)
    requests_after_first = len(openai_stand_in.requests)
    second = await model(texts)

    assert requests_after_first == 2  # batch_size 2 of the inner model
    assert len(openai_stand_in.requests) == requests_after_first
    assert second.embeddings == first.embeddings
    assert (first.usage.cached_inputs, second.usage.cached_inputs) == (0, 3)
    assert second.usage.input_tokens == 0


async def test_only_misses_reach_the_inner_model(openai_stand_in, tmp_path: Path) -> None:
    model = CachedEmbeddingModel(openai_model(openai_stand_in), tmp_path)
    await model(["alpha", "beta"])
    openai_stand_in.requests.clear()
    response = await model(["beta", "delta", "alpha", "delta"])
    assert [body["input"] for body in openai_stand_in.bodies] == [["delta"]]
    assert response.usage.cached_inputs == 3
    assert response.embeddings[1] == response.embeddings[3]


async def test_vectors_are_float32_and_in_input_order(
    openai_stand_in, tmp_path: Path, vector_for
) -> None:
    model = CachedEmbeddingModel(openai_model(openai_stand_in), tmp_path)
    texts = ["one", "two", "three"]
    for _ in range(2):  # a miss and a hit give the same numbers
        response = await model(texts)
        for text, vector in zip(texts, response.embeddings, strict=True):
            expected = np.asarray(vector_for(text, 8), dtype=np.float32).tolist()
            assert vector == expected


async def test_a_damaged_entry_is_embedded_again(openai_stand_in, tmp_path: Path) -> None:
    """An entry of the wrong length (a torn or edited file) is a miss, never a short vector."""
    model = CachedEmbeddingModel(openai_model(openai_stand_in), tmp_path)
    first = await model(["alpha", "beta"])
    await model.aclose()
    with sqlite3.connect(model.path) as db:
        db.execute("UPDATE embeddings SET vector = substr(vector, 1, 12)")
    openai_stand_in.requests.clear()
    again = await model(["alpha", "beta"])
    assert [body["input"] for body in openai_stand_in.bodies] == [["alpha", "beta"]]
    assert again.embeddings == first.embeddings
    assert again.usage.cached_inputs == 0


async def test_other_dimensions_or_input_type_miss(openai_stand_in, tmp_path: Path) -> None:
    await CachedEmbeddingModel(openai_model(openai_stand_in), tmp_path)(["alpha"])
    assert input_count(openai_stand_in) == 1

    await CachedEmbeddingModel(openai_model(openai_stand_in, dimensions=16), tmp_path)(["alpha"])
    assert input_count(openai_stand_in) == 2

    same = CachedEmbeddingModel(openai_model(openai_stand_in), tmp_path)
    await same(["alpha"], input_type="query")
    assert input_count(openai_stand_in) == 3
    await same(["alpha"], input_type="document")
    assert input_count(openai_stand_in) == 3


async def test_the_cache_survives_reopening(openai_stand_in, tmp_path: Path) -> None:
    first = CachedEmbeddingModel(openai_model(openai_stand_in), tmp_path / "cache")
    before = await first(["persisted text"])
    await first.aclose()

    reopened = CachedEmbeddingModel(openai_model(openai_stand_in), tmp_path / "cache")
    after = await reopened(["persisted text"])
    assert len(openai_stand_in.requests) == 1
    assert after.embeddings == before.embeddings
    assert after.usage.cached_inputs == 1


async def test_concurrent_calls_all_get_correct_vectors(openai_stand_in, tmp_path: Path) -> None:
    model = CachedEmbeddingModel(openai_model(openai_stand_in), tmp_path)
    batches = [[f"text {i}", f"text {i + 1}", "shared"] for i in range(8)]
    results = await asyncio.gather(*(model(b) for b in batches))
    again = await asyncio.gather(*(model(b) for b in batches))
    assert [r.embeddings for r in results] == [r.embeddings for r in again]
    assert all(r.usage.cached_inputs == 3 for r in again)


async def test_data_blocks_are_keyed_by_their_data(dashscope_stand_in, tmp_path: Path) -> None:
    inner = DashScopeEmbeddingModel(
        DashScopeCredential(
            api_key=dashscope_stand_in.api_key, base_url=dashscope_stand_in.base_url
        ),
        model="qwen3-vl-embedding",
        dimensions=8,
        http_client=dashscope_stand_in.client(),
    )
    model = CachedEmbeddingModel(inner, tmp_path)
    red = DataBlock(source=Base64Source(data="UkVE", media_type="image/png"))
    blue = DataBlock(source=Base64Source(data="QkxVRQ==", media_type="image/png"))
    same_red = DataBlock(source=Base64Source(data="UkVE", media_type="image/png"), name="copy")

    await model([red])
    response = await model([blue, same_red])
    assert len(dashscope_stand_in.requests) == 2
    assert response.usage.cached_inputs == 1
    assert model.supports_multimodal


async def test_the_wrapper_mirrors_the_inner_model(openai_stand_in, tmp_path: Path) -> None:
    inner = openai_model(openai_stand_in, dimensions=24)
    model = CachedEmbeddingModel(inner, tmp_path)
    assert (model.model, model.dimensions, model.supports_multimodal, model.batch_size) == (
        inner.model,
        24,
        False,
        inner.batch_size,
    )
    image = DataBlock(source=Base64Source(data="AAAA", media_type="image/png"))
    with pytest.raises(ValueError, match="DataBlock"):
        await model([image])


def test_cache_dir_must_be_a_directory(openai_stand_in, tmp_path: Path) -> None:
    file = tmp_path / "a-file"
    file.write_text("x")
    with pytest.raises(NotADirectoryError, match="cache_dir"):
        CachedEmbeddingModel(openai_model(openai_stand_in), file)
