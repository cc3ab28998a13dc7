"""What bounds the ONNX model's working memory: token-budget batching (the shapes the session
receives, vectors unchanged and in input order) and the session settings."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest

from archivist.embedding import LocalEmbeddingModel, OnnxEmbeddingModel
from archivist.embedding.onnx import RUN_COST_TOKENS, plan_by_length

# Texts of very different token lengths, in no particular order.
TEXTS = [f"item {i}: " + "several filler words " * ((i * 13) % 40) for i in range(20)]


class RecordingSession(ort.InferenceSession):  # type: ignore[misc]
    """The real session, recording its optimizer settings and the (batch, sequence) shape of
    every run."""

    shapes: list[tuple[int, int]] = []
    disabled: list[list[str]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        RecordingSession.disabled.append(list(kwargs.get("disabled_optimizers", [])))
        super().__init__(*args, **kwargs)

    def run(self, outputs: Any, feed: Any, run_options: Any = None) -> Any:
        RecordingSession.shapes.append(tuple(feed["input_ids"].shape))
        return super().run(outputs, feed, run_options)


@pytest.fixture
def shapes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int]]]:
    """Shapes of the session runs of models created in the test."""
    monkeypatch.setattr(ort, "InferenceSession", RecordingSession)
    RecordingSession.shapes = []
    RecordingSession.disabled = []
    yield RecordingSession.shapes


SPLIT: dict[str, Any] = {"fold_constants": False, "query_fold_constants": True, "query_threads": 1}
"""The default model's split: a lean document session and a folded query session."""


def model_like(default: OnnxEmbeddingModel, **settings: Any) -> OnnxEmbeddingModel:
    return OnnxEmbeddingModel(
        default.model_path, default.tokenizer_path, max_length=default.max_length, **settings
    )


def plan_cost(plan: list[list[int]], lengths: list[int], run_cost: int = RUN_COST_TOKENS) -> int:
    """What `plan_by_length` minimises: padded tokens plus `run_cost` per batch."""
    return sum(run_cost + len(batch) * max(lengths[i] for i in batch) for batch in plan)


def cheapest_cost(lengths: list[int], batch_size: int, token_budget: int | None) -> int:
    """The cheapest cost over every way to cut `lengths` into allowed batches (brute force)."""
    best = math.inf

    def place(index: int, batches: list[list[int]]) -> None:
        nonlocal best
        if index == len(lengths):
            best = min(best, plan_cost(batches, lengths))
            return
        for batch in [*batches, []]:
            grown = [*batch, index]
            padded = len(grown) * max(lengths[i] for i in grown)
            if len(grown) > batch_size or (
                len(grown) > 1 and token_budget is not None and padded > token_budget
            ):
                continue
            place(
                index + 1,
                [b if b is not batch else grown for b in batches] + ([] if batch else [grown]),
            )

    place(0, [])
    return int(best)


def test_plan_covers_every_index_once_within_both_limits() -> None:
    lengths = [5, 200, 17, 256, 40, 40, 3, 128, 90, 256, 12, 64]
    plan = plan_by_length(lengths, batch_size=4, token_budget=300)
    assert sorted(i for batch in plan for i in batch) == list(range(len(lengths)))
    for batch in plan:
        assert len(batch) <= 4
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 300
    # longest first, and each batch holds neighbours in length order
    widths = [[lengths[i] for i in batch] for batch in plan]
    flat = [w for batch in widths for w in batch]
    assert flat == sorted(lengths, reverse=True)
    assert widths[:3] == [[256], [256], [200]]


@pytest.mark.parametrize(
    ("lengths", "batch_size", "token_budget"),
    [
        ([9, 1, 5, 7, 3], 2, None),
        ([60, 12, 14, 11, 58, 13, 10, 61], 8, None),
        ([30, 31, 29, 80, 5, 6, 7, 100], 3, 200),
        ([50, 10, 10, 300, 12], 4, 60),
        ([20] * 7, 3, None),
    ],
)
def test_plan_is_the_cheapest_allowed_cut(
    lengths: list[int], batch_size: int, token_budget: int | None
) -> None:
    plan = plan_by_length(lengths, batch_size, token_budget)
    assert sorted(i for batch in plan for i in batch) == list(range(len(lengths)))
    assert all(len(batch) <= batch_size for batch in plan)
    assert plan_cost(plan, lengths) == cheapest_cost(lengths, batch_size, token_budget)


def test_short_and_long_inputs_run_apart_even_when_one_batch_would_hold_them() -> None:
    # One batch of 8 would pad the five short queries to 60 tokens each.
    lengths = [60, 12, 14, 11, 58, 13, 10, 61]
    plan = plan_by_length(lengths, batch_size=8, token_budget=None)
    assert [sorted(lengths[i] for i in batch) for batch in plan] == [
        [58, 60, 61],
        [10, 11, 12, 13, 14],
    ]
    # Inputs of one length share runs as large as allowed: a run costs more than no padding.
    assert plan_by_length([20] * 7, batch_size=3, token_budget=None) == [[0, 1, 2], [3, 4, 5], [6]]


def test_an_input_longer_than_the_budget_runs_alone() -> None:
    assert plan_by_length([50, 10, 10], batch_size=8, token_budget=20) == [[0], [1, 2]]


async def test_the_session_receives_shapes_within_the_budget(
    default_model: OnnxEmbeddingModel, shapes: list[tuple[int, int]]
) -> None:
    model = model_like(default_model, batch_size=16, token_budget=256)
    await model(TEXTS)
    assert sum(batch for batch, _ in shapes) == len(TEXTS)
    assert all(batch == 1 or batch * width <= 256 for batch, width in shapes)
    assert all(batch <= 16 for batch, _ in shapes)
    # short texts share big batches, long ones go in small ones
    assert max(batch for batch, _ in shapes) > min(batch for batch, _ in shapes)


async def test_batch_size_stays_an_upper_bound_under_a_large_budget(
    default_model: OnnxEmbeddingModel, shapes: list[tuple[int, int]]
) -> None:
    model = model_like(default_model, batch_size=3, token_budget=100_000)
    await model(TEXTS)
    assert max(batch for batch, _ in shapes) == 3


async def test_vectors_match_the_plain_path_in_input_order(
    default_model: OnnxEmbeddingModel,
) -> None:
    budgeted = await model_like(default_model, batch_size=16, token_budget=256)(TEXTS)
    plain = await model_like(default_model, batch_size=1)(TEXTS)
    assert np.allclose(budgeted.embeddings, plain.embeddings, atol=1e-4)
    assert budgeted.usage.input_tokens == plain.usage.input_tokens


@pytest.mark.parametrize("value", [0, -5, 2.5, True, "512"])
def test_a_bad_token_budget_is_named(default_model: OnnxEmbeddingModel, value: object) -> None:
    with pytest.raises(ValueError, match="token_budget"):
        model_like(default_model, token_budget=value)


async def test_constant_folding_off_gives_the_same_vectors(
    default_model: OnnxEmbeddingModel, shapes: list[tuple[int, int]]
) -> None:
    unfolded = await model_like(default_model, fold_constants=False)(TEXTS[:8])
    folded = await model_like(default_model, fold_constants=True)(TEXTS[:8])
    assert RecordingSession.disabled == [["ConstantFolding"], []]
    assert np.allclose(unfolded.embeddings, folded.embeddings, atol=1e-4)


def test_the_default_model_bounds_its_working_memory() -> None:
    model = LocalEmbeddingModel()
    assert isinstance(model, OnnxEmbeddingModel)
    assert (model.token_budget, model.batch_size, model.fold_constants) == (1024, 32, False)
    session = model._load().session
    assert session.get_session_options().enable_mem_pattern is False


def test_the_default_model_s_threads_sleep_between_runs() -> None:
    model, spinning = LocalEmbeddingModel(), LocalEmbeddingModel(allow_spinning=True)
    assert isinstance(model, OnnxEmbeddingModel) and isinstance(spinning, OnnxEmbeddingModel)
    options = model._load().session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    with pytest.raises(Exception, match="allow_spinning"):  # unset: onnxruntime's default, spin
        spinning._load().session.get_session_options().get_session_config_entry(
            "session.intra_op.allow_spinning"
        )


async def test_queries_run_on_a_folded_session_built_only_when_a_query_comes(
    shapes: list[tuple[int, int]],
) -> None:
    model = LocalEmbeddingModel()
    assert isinstance(model, OnnxEmbeddingModel)
    documents = await model(TEXTS[:6], input_type="document")
    # ingesting builds the lean document session alone
    assert RecordingSession.disabled == [["ConstantFolding"]]
    assert model._query_runtime is None
    document_runtime = model._runtime
    assert document_runtime is not None
    assert model.query_session_after == 8
    # the first eight queries run on the document session: no build for a one-query process
    for text in TEXTS[:8]:
        await model([text], input_type="query")
    assert RecordingSession.disabled == [["ConstantFolding"]]
    assert model._query_runtime is None
    queries = await model(TEXTS[:6], input_type="query")
    assert RecordingSession.disabled == [["ConstantFolding"], []]
    assert model._query_runtime is not None
    # one tokenizer serves both sessions, and the vectors agree
    assert model._query_runtime.tokenizer is document_runtime.tokenizer
    assert np.allclose(documents.embeddings, queries.embeddings, atol=1e-4)
    # from now on documents share the query session and the lean one is released
    assert model._runtime is None
    again = await model(TEXTS[:6], input_type="document")
    assert np.allclose(documents.embeddings, again.embeddings, atol=1e-4)
    await model(TEXTS[6:9], input_type="query")
    assert len(RecordingSession.disabled) == 2  # no session is built twice


async def test_a_one_query_process_builds_only_the_lean_session(
    shapes: list[tuple[int, int]],
) -> None:
    model = LocalEmbeddingModel()
    assert isinstance(model, OnnxEmbeddingModel)
    model.chunk_tokenizer()  # what opening a knowledge base asks for
    await model(["one query"], input_type="query")
    assert RecordingSession.disabled == [["ConstantFolding"]]
    assert model._query_runtime is None


async def test_a_search_only_process_keeps_one_session(
    default_model: OnnxEmbeddingModel, shapes: list[tuple[int, int]]
) -> None:
    model = model_like(default_model, **SPLIT, query_session_after=0)
    model.chunk_tokenizer()
    await model(["one query"], input_type="query")
    assert RecordingSession.disabled == [[]]  # built on the first query, no lean session
    assert model._runtime is None
    await model(TEXTS[:8], input_type="query")
    assert len(RecordingSession.disabled) == 1


async def test_a_batch_counts_every_query_it_holds(
    default_model: OnnxEmbeddingModel, shapes: list[tuple[int, int]]
) -> None:
    model = model_like(default_model, **SPLIT, query_session_after=4)
    await model(TEXTS[:4], input_type="query")
    assert model._query_runtime is None
    await model(TEXTS[:1], input_type="query")
    assert model._query_runtime is not None and model._runtime is None
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="query_session_after"):
            model_like(default_model, **SPLIT, query_session_after=bad)


async def test_alike_settings_share_one_session(
    default_model: OnnxEmbeddingModel, shapes: list[tuple[int, int]]
) -> None:
    model = model_like(default_model, fold_constants=True, threads=1, query_threads=1)
    await model(TEXTS[:3], input_type="document")
    await model(TEXTS[:3], input_type="query")
    assert RecordingSession.disabled == [[]]
    assert model._query_runtime is None


async def test_query_threads_set_the_query_session_alone(
    default_model: OnnxEmbeddingModel,
) -> None:
    model = model_like(default_model, threads=2, query_threads=1, query_fold_constants=True)
    await model(TEXTS[:2], input_type="document")
    assert model._runtime is not None
    document_options = model._runtime.session.get_session_options()
    await model(TEXTS[:2], input_type="query")
    assert model._query_runtime is not None
    query_options = model._query_runtime.session.get_session_options()
    assert (query_options.intra_op_num_threads, document_options.intra_op_num_threads) == (1, 2)


@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_a_bad_query_thread_count_is_named(
    default_model: OnnxEmbeddingModel, value: object
) -> None:
    with pytest.raises(ValueError, match="query_threads"):
        model_like(default_model, query_threads=value)


async def test_query_batches_follow_the_same_limits_and_keep_input_order(
    default_model: OnnxEmbeddingModel, shapes: list[tuple[int, int]]
) -> None:
    model = model_like(
        default_model, batch_size=8, token_budget=300, query_fold_constants=True, query_threads=1
    )
    together = await model(TEXTS, input_type="query")
    assert shapes and all(b <= 8 and (b == 1 or b * n <= 300) for b, n in shapes)
    shapes.clear()
    alone = [(await model([text], input_type="query")).embeddings[0] for text in TEXTS[:5]]
    assert all(batch == 1 for batch, _ in shapes)
    assert np.allclose(together.embeddings[:5], alone, atol=1e-4)
    assert together.usage.input_tokens > 0
