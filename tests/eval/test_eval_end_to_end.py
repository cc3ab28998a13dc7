"""End to end on a tiny synthetic BEIR dataset with the real default embedding model."""

import argparse
import json
from pathlib import Path

import pytest

from archivist.cli.eval_command import add_eval_command
from archivist.embedding import CachedEmbeddingModel, EmbeddingModelBase, LocalEmbeddingModel
from archivist.eval import EvalConfig, index_corpus, load_beir, retrieve, run_evaluation
from archivist.rag import ApproxTokenChunker, KnowledgeBase
from archivist.rag.store.qdrant import QdrantStore


@pytest.fixture(scope="module")
def model() -> EmbeddingModelBase:
    return LocalEmbeddingModel()


async def test_evaluation_finds_each_topic_first(
    beir_dir: Path, tmp_path: Path, model: EmbeddingModelBase
) -> None:
    config = EvalConfig(dataset_dir=beir_dir, cache_dir=tmp_path / "cache")
    cached = CachedEmbeddingModel(model, tmp_path / "cache")
    result = await run_evaluation(config, embedding_model=cached)
    assert (result.dataset, result.documents, result.queries) == ("tiny", 6, 3)
    assert result.chunks == 6  # every abstract fits in one 256-token chunk
    assert result.metrics == {"nDCG@10": 1.0, "Recall@10": 1.0, "Recall@100": 1.0, "MRR@10": 1.0}
    assert set(result.per_query) == {"1", "2", "3"}
    again = await run_evaluation(config, embedding_model=cached)  # served from the cache
    assert again.metrics == result.metrics


async def test_index_uses_corpus_ids_and_ranks_by_best_chunk(
    beir_dir: Path, model: EmbeddingModelBase
) -> None:
    data = load_beir(beir_dir)
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase("t", "tiny", model, store, "c")
        seen: list[int] = []
        chunks = await index_corpus(
            kb,
            data.corpus,
            ApproxTokenChunker(chunk_size=16, overlap=4),
            batch_size=4,
            on_batch=seen.append,
        )
        assert seen == [4, 2]
        documents = await kb.list_documents()
        assert sorted(d.document_id for d in documents) == ["10", "20", "30", "40", "50", "60"]
        assert chunks == sum(d.chunk_count for d in documents) > 6  # small chunks: several per doc
        run = await retrieve(kb, data.queries, depth=50)
    assert set(run) == {"1", "2", "3"}
    for scores in run.values():
        assert len(scores) == 6  # one entry per document, its best chunk's score
    assert max(run["3"], key=run["3"].__getitem__) == "30"


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_eval_command(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


async def test_cli_json(beir_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = _parse(
        ["eval", str(beir_dir), "--json", "--queries", "2", "--cache-dir", str(tmp_path / "c")]
    )
    assert await args.handler(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["queries"] == 2
    assert payload["metrics"]["MRR@10"] == 1.0
    assert "per_query" not in payload
    assert payload["config"]["chunk_size"] == 256


async def test_cli_table(beir_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = _parse(["eval", str(beir_dir), "--no-cache", "--corpus", "4", "--chunk-size", "128"])
    assert await args.handler(args) == 0
    out = capsys.readouterr().out
    assert "nDCG@10" in out and "Recall@100" in out and "tiny" in out


def test_cli_rejects_bad_options(beir_dir: Path) -> None:
    args = _parse(["eval", str(beir_dir), "--overlap", "300"])
    with pytest.raises(ValueError, match="overlap"):
        import asyncio

        asyncio.run(args.handler(args))
