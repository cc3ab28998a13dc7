"""Custom embedding models written the AgentScope way load and work in a KnowledgeBase.

AgentScope's custom model sets `model`, `dimensions` and `supports_multimodal` itself and either
overrides `__call__` or implements the per-batch hook `_call_api`; neither form is abstract here.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from archivist.credential import OpenAICredential
from archivist.embedding import EmbeddingModelBase
from archivist.embedding.response import EmbeddingResponse
from archivist.message import TextBlock
from archivist.rag import Chunk, KnowledgeBase
from archivist.rag.store.qdrant import QdrantStore
from fake_clock import FakeClock

DIMENSIONS = 8


def toy_vector(text: str) -> list[float]:
    """A deterministic non-zero vector for `text`."""
    digest = hashlib.sha256(text.encode()).digest()
    return [1.0 + b / 255 for b in digest[:DIMENSIONS]]


class WholeCallModel(EmbeddingModelBase):
    """Overrides `__call__` and never calls the base constructor."""

    def __init__(self) -> None:
        self.model = "toy-whole"
        self.dimensions = DIMENSIONS
        self.supports_multimodal = False

    async def __call__(self, inputs: Any, **kwargs: Any) -> EmbeddingResponse:
        texts = [x.text if isinstance(x, TextBlock) else str(x) for x in inputs]
        return EmbeddingResponse(embeddings=[toy_vector(t) for t in texts])


class CallApiModel(EmbeddingModelBase):
    """Implements AgentScope's per-batch hook `_call_api`; the base batches and retries."""

    def __init__(self) -> None:
        super().__init__(model="toy-batch", dimensions=None, batch_size=2)
        self.dimensions = DIMENSIONS
        self.batches: list[int] = []

    async def _call_api(self, inputs: list[Any], **kwargs: Any) -> EmbeddingResponse:
        self.batches.append(len(inputs))
        return EmbeddingResponse(embeddings=[toy_vector(str(x)) for x in inputs])


async def test_a_call_api_subclass_is_batched_by_the_base() -> None:
    model = CallApiModel()
    response = await model(["a", "b", "c", TextBlock(text="d")])
    assert response.embeddings == [toy_vector(t) for t in "abcd"]
    assert model.batches == [2, 2]


def test_dimensions_is_a_settable_checked_attribute() -> None:
    model = CallApiModel()
    model.dimensions = 16
    assert model.dimensions == 16
    with pytest.raises(ValueError, match="dimensions"):
        model.dimensions = 0


async def test_a_subclass_with_no_hook_is_constructible_but_says_what_is_missing() -> None:
    class Bare(EmbeddingModelBase):
        pass

    model = Bare(model="bare", dimensions=4)
    with pytest.raises(NotImplementedError, match="_embed_batch, _call_api or __call__"):
        await model(["x"])


@pytest.mark.parametrize("make", [WholeCallModel, CallApiModel])
async def test_custom_models_run_a_knowledge_base(make: type[EmbeddingModelBase]) -> None:
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase(
            name="kb",
            description="toy",
            embedding_model=make(),
            vector_store=store,
            collection="docs",
        )
        for text in ("cats sleep", "dogs bark", "fish swim"):
            chunk = Chunk(
                content=TextBlock(text=text), source=f"{text}.txt", chunk_index=0, total_chunks=1
            )
            await kb.insert_document([chunk], document_id=text)
        results = await kb.search(["dogs bark"], top_k=1, mode="dense")
        assert [r.document_id for r in results] == ["dogs bark"]
        assert repr(kb.embedding_model).endswith(f"dimensions={DIMENSIONS})")


class PositionalInitModel(EmbeddingModelBase):
    """Calls the base constructor with AgentScope's arguments, positionally."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)

    async def _call_api(self, inputs: list[Any], **kwargs: Any) -> EmbeddingResponse:
        return EmbeddingResponse(embeddings=[toy_vector(str(t)) for t in inputs])


def test_the_base_takes_agentscopes_constructor_arguments_in_order() -> None:
    credential = OpenAICredential(api_key="k", base_url="http://127.0.0.1:9")
    model = PositionalInitModel(credential, "toy", DIMENSIONS, None, 512, 3, 2, 0.25)
    assert model.credential is credential
    assert (model.model, model.dimensions, model.context_size) == ("toy", DIMENSIONS, 512)
    assert (model.batch_size, model.max_retries, model.retry_base_delay) == (3, 2, 0.25)
    assert isinstance(model.parameters, EmbeddingModelBase.Parameters)


def test_dimensions_may_come_from_legacy_parameters_and_leave_them() -> None:
    legacy = EmbeddingModelBase.Parameters(dimensions=16, text_type="document")
    model = PositionalInitModel(None, "toy", None, legacy, None, 4, 1, 0.1)
    assert model.dimensions == 16
    assert model.parameters.model_dump() == {"text_type": "document"}
    explicit = PositionalInitModel(None, "toy", 8, legacy, None, 4, 1, 0.1)
    assert explicit.dimensions == 8
    assert "dimensions" not in explicit.parameters.model_dump()


@pytest.mark.parametrize(
    ("args", "error", "names"),
    [
        ((None, None), ValueError, "model"),
        ((None, ""), ValueError, "model"),
        ((None, "toy", DIMENSIONS, {"dimensions": 3}), TypeError, "parameters"),
        ((None, "toy", DIMENSIONS, None, 0), ValueError, "context_size"),
        ((None, "toy", 0), ValueError, "dimensions"),
        ((None, "toy", DIMENSIONS, None, None, 0), ValueError, "batch_size"),
        ((None, "toy", DIMENSIONS, None, None, 2, -1), ValueError, "max_retries"),
        ((None, "toy", DIMENSIONS, None, None, 2, 1, -0.5), ValueError, "retry_delay"),
    ],
)
def test_bad_constructor_arguments_name_the_argument(
    args: tuple[Any, ...], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        PositionalInitModel(*args)


class FlakyModel(PositionalInitModel):
    """Declares ConnectionError retryable, as an AgentScope provider does."""

    def __init__(self, failures: list[Exception]) -> None:
        super().__init__(None, "flaky", DIMENSIONS, None, None, 8, 2, 0.5)
        self.failures = failures
        self.calls = 0

    @classmethod
    def _get_retryable_exceptions(cls) -> tuple[type[Exception], ...]:
        return (ConnectionError,)

    async def _call_api(self, inputs: list[Any], **kwargs: Any) -> EmbeddingResponse:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return await super()._call_api(inputs)


async def test_declared_retryable_exceptions_are_retried_and_others_are_not() -> None:
    model = FlakyModel([ConnectionError("dropped"), ConnectionError("dropped")])
    model.clock = clock = FakeClock()
    response = await model(["a", "b"])
    assert len(response.embeddings) == 2
    assert model.calls == 3 and len(clock.sleeps) == 2
    model = FlakyModel([ConnectionError("dropped")] * 3)
    model.clock = FakeClock()
    with pytest.raises(ConnectionError):
        await model(["a"])
    assert model.calls == 3  # max_retries = 2
    model = FlakyModel([ValueError("bad input")])
    model.clock = FakeClock()
    with pytest.raises(ValueError, match="bad input"):
        await model(["a"])
    assert model.calls == 1
