"""EmbeddingModelBase's own logic, driven through a minimal scripted subclass."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence

import pytest

from archivist.embedding import (
    EmbeddingAPIError,
    EmbeddingError,
    EmbeddingModelBase,
    EmbeddingResponse,
    EmbeddingUsage,
    TransientEmbeddingError,
)
from archivist.embedding.base import BatchItem, InputType
from archivist.message import Base64Source, DataBlock, TextBlock
from fake_clock import FakeClock


class ScriptedModel(EmbeddingModelBase):
    """Vector i of a text is [len(text), i...]; failures and bad outputs come from a script."""

    def __init__(self, *, dims: int = 3, multimodal: bool = False, **settings: object) -> None:
        super().__init__(
            model="scripted",
            dimensions=dims,
            supports_multimodal=multimodal,
            **settings,  # type: ignore[arg-type]
        )
        self.batches: list[list[BatchItem]] = []
        self.input_types: list[InputType] = []
        self.failures: list[BaseException] = []
        self.outputs: list[list[list[float]]] = []
        self.active = 0
        self.peak = 0

    async def _embed_batch(
        self, batch: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        self.batches.append(list(batch))
        self.input_types.append(input_type)
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            for _ in range(3):  # give other batches the chance to overlap
                await asyncio.sleep(0)
            if self.failures:
                raise self.failures.pop(0)
            if self.outputs:
                return EmbeddingResponse(embeddings=self.outputs.pop(0))
            vectors = [[float(len(str(item)))] * self.dimensions for item in batch]
            return EmbeddingResponse(
                embeddings=vectors, usage=EmbeddingUsage(input_tokens=len(batch))
            )
        finally:
            self.active -= 1


def texts(n: int) -> list[str]:
    return ["x" * (i + 1) for i in range(n)]


async def test_batches_have_batch_size_and_keep_input_order() -> None:
    model = ScriptedModel(batch_size=10)
    inputs = texts(25)
    response = await model(inputs)
    assert [len(b) for b in model.batches] == [10, 10, 5]
    assert [v[0] for v in response.embeddings] == [float(i + 1) for i in range(25)]
    assert response.usage.input_tokens == 25


async def test_input_type_reaches_every_batch() -> None:
    model = ScriptedModel(batch_size=2)
    await model(texts(5), input_type="query")
    assert model.input_types == ["query", "query", "query"]


async def test_concurrency_never_exceeds_max_concurrency() -> None:
    model = ScriptedModel(batch_size=1, max_concurrency=3)
    await model(texts(20))
    assert len(model.batches) == 20
    assert model.peak == 3


async def test_concurrency_bound_is_shared_by_concurrent_calls() -> None:
    model = ScriptedModel(batch_size=1, max_concurrency=2)
    await asyncio.gather(model(texts(6)), model(texts(6)))
    assert model.peak == 2


async def test_empty_input_returns_empty_response_without_calls() -> None:
    model = ScriptedModel()
    response = await model([])
    assert response.embeddings == []
    assert response.usage == EmbeddingUsage()
    assert model.batches == []


async def test_text_blocks_arrive_as_their_text() -> None:
    model = ScriptedModel()
    await model([TextBlock(text="hello"), "world"])
    assert model.batches == [["hello", "world"]]


@pytest.mark.parametrize(
    "failure",
    [
        TransientEmbeddingError("overloaded"),
        TimeoutError(),
        EmbeddingAPIError(429, "slow down"),
        EmbeddingAPIError(503, "unavailable"),
    ],
    ids=["transient", "timeout", "429", "503"],
)
async def test_transient_errors_are_retried_then_succeed(
    failure: BaseException, clock: FakeClock
) -> None:
    model = ScriptedModel(clock=clock, retry_base_delay=0.2, retry_max_delay=10)
    model.failures = [failure, failure]
    response = await model(["abc"])
    assert response.embeddings == [[3.0, 3.0, 3.0]]
    assert len(model.batches) == 3
    # Exponential backoff with jitter: attempt k waits within [d/2, d] for d = 0.2 * 2**k.
    assert len(clock.sleeps) == 2
    assert 0.1 <= clock.sleeps[0] <= 0.2
    assert 0.2 <= clock.sleeps[1] <= 0.4


async def test_retry_after_of_a_transient_error_is_the_delay(clock: FakeClock) -> None:
    model = ScriptedModel(clock=clock)
    model.failures = [TransientEmbeddingError("rate limited", status=429, retry_after=7.5)]
    await model(["a"])
    assert clock.sleeps == [7.5]


async def test_backoff_is_capped_by_retry_max_delay(clock: FakeClock) -> None:
    model = ScriptedModel(clock=clock, max_retries=6, retry_base_delay=1.0, retry_max_delay=2.0)
    model.failures = [TransientEmbeddingError("busy")] * 6
    await model(["a"])
    assert max(clock.sleeps) <= 2.0


async def test_gives_up_after_max_retries(clock: FakeClock) -> None:
    model = ScriptedModel(clock=clock, max_retries=2, retry_base_delay=0.01)
    model.failures = [TransientEmbeddingError("still busy")] * 5
    with pytest.raises(TransientEmbeddingError, match="still busy") as caught:
        await model(["a"])
    assert len(model.batches) == 3
    assert len(clock.sleeps) == 2
    assert any("gave up after 3 attempts" in note for note in caught.value.__notes__)


@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_permanent_errors_are_raised_at_once(status: int, clock: FakeClock) -> None:
    model = ScriptedModel(clock=clock)
    model.failures = [EmbeddingAPIError(status, "the provider's own words")]
    with pytest.raises(EmbeddingAPIError, match="the provider's own words") as caught:
        await model(["a"])
    assert caught.value.status == status
    assert len(model.batches) == 1
    assert clock.sleeps == []


async def test_unexpected_exceptions_are_not_retried(clock: FakeClock) -> None:
    model = ScriptedModel(clock=clock)
    model.failures = [RuntimeError("bug")]
    with pytest.raises(RuntimeError, match="bug"):
        await model(["a"])
    assert clock.sleeps == []


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ([[1.0, 2.0, 3.0]], "returned 1 vectors for 2 inputs"),
        ([[1.0, 2.0, 3.0], [1.0, 2.0]], "has 2 dimensions, expected 3"),
        ([[1.0, 2.0, 3.0], [1.0, math.nan, 3.0]], "must be finite"),
        ([[1.0, math.inf, 3.0], [1.0, 2.0, 3.0]], "must be finite"),
    ],
    ids=["count", "dimension", "nan", "inf"],
)
async def test_bad_output_is_an_embedding_error_naming_the_model(
    output: list[list[float]], message: str, clock: FakeClock
) -> None:
    model = ScriptedModel(clock=clock)
    model.outputs = [output]
    with pytest.raises(EmbeddingError, match=message) as caught:
        await model(["a", "b"])
    assert "scripted" in str(caught.value)
    assert clock.sleeps == []


async def test_a_data_block_for_a_text_only_model_is_a_value_error() -> None:
    model = ScriptedModel()
    image = DataBlock(source=Base64Source(data="AAAA", media_type="image/png"))
    with pytest.raises(ValueError, match=r"inputs\[1\] is a DataBlock"):
        await model(["a", image])
    assert model.batches == []


async def test_a_multimodal_model_receives_data_blocks() -> None:
    model = ScriptedModel(multimodal=True)
    image = DataBlock(source=Base64Source(data="AAAA", media_type="image/png"))
    await model(["a", image])
    assert model.batches == [["a", image]]


async def test_a_wrong_input_type_is_a_type_error_naming_the_index() -> None:
    model = ScriptedModel()
    with pytest.raises(TypeError, match=r"inputs\[2\] is int"):
        await model(["a", "b", 3])  # type: ignore[list-item]


async def test_a_bare_string_is_a_type_error() -> None:
    model = ScriptedModel()
    with pytest.raises(TypeError, match="sequence"):
        await model("just one string")


async def test_an_unknown_input_type_is_a_value_error() -> None:
    model = ScriptedModel()
    with pytest.raises(ValueError, match="input_type"):
        await model(["a"], input_type="passage")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("batch_size", 0),
        ("max_concurrency", 0),
        ("max_retries", -1),
        ("retry_base_delay", -1.0),
        ("dims", 0),
    ],
)
def test_bad_settings_are_value_errors_naming_the_argument(setting: str, value: object) -> None:
    name = "dimensions" if setting == "dims" else setting
    with pytest.raises(ValueError, match=name):
        ScriptedModel(**{setting: value})  # type: ignore[arg-type]
