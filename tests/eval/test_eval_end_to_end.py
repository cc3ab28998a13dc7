"""End to end on a tiny synthetic BEIR dataset with the real default embedding model."""

import argparse
import json
from pathlib import Path

import pytest

from archivist.cli.eval_command import add_eval_command
from archivist.embedding import CachedEmbeddingModel, EmbeddingModelBase, LocalEmbeddingModel
from archivist.eval import EvalConfig, index_corpus, load_beir, rank_documents, run_evaluation
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
            on_batch=seen.append,
        )
        assert sum(seen) == 6  # every document is counted, in windows of written chunks
        documents = await kb.list_documents()
        assert sorted(d.document_id for d in documents) == ["10", "20", "30", "40", "50", "60"]
        assert chunks == sum(d.chunk_count for d in documents) > 6  # small chunks: several per doc
        run = await rank_documents(kb, data.queries, depth=50)
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
    assert payload["config"]["chunk_size"] is None  # the model's own input length
    assert payload["config"]["mode"] == "hybrid"
    assert payload["embedding"] == {"chunk_inputs": 6, "served_from_cache": 0, "truncated": 0}
    assert payload["empty_documents"] == 0
    assert payload["search_ms_p50"] > 0


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


async def test_a_second_run_reports_the_cache_served_it(
    beir_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", str(beir_dir), "--json", "--cache-dir", str(tmp_path / "c")]
    for served in (0, 6):
        args = _parse(argv)
        assert await args.handler(args) == 0
        payload = json.loads(capsys.readouterr().out)
        assert payload["embedding"]["served_from_cache"] == served


@pytest.mark.parametrize("mode", ["dense", "sparse", "hybrid"])
async def test_every_mode_runs_and_writes_a_trec_run_file(
    beir_dir: Path, tmp_path: Path, mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_file = tmp_path / f"{mode}.run"
    args = _parse(
        ["eval", str(beir_dir), "--json", "--mode", mode, "--no-cache", "--run", str(run_file)]
    )
    assert await args.handler(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["config"]["mode"] == mode
    assert payload["metrics"]["Recall@100"] == 1.0
    lines = [line.split() for line in run_file.read_text().splitlines()]
    assert {line[0] for line in lines} == {"1", "2", "3"}
    for query in ("1", "2", "3"):
        rows = [line for line in lines if line[0] == query]
        assert [int(row[3]) for row in rows] == list(range(1, len(rows) + 1))
        scores = [float(row[4]) for row in rows]
        assert scores == sorted(scores, reverse=True)
        assert all(row[1] == "Q0" and row[5] == f"archivist-{mode}" for row in rows)
    assert next(line[2] for line in lines if line[0] == "3") == "30"


async def test_empty_documents_are_counted_and_titles_not_doubled(
    beir_dir: Path, tmp_path: Path, model: EmbeddingModelBase
) -> None:
    import gzip
    import shutil

    root = Path(shutil.copytree(beir_dir, tmp_path / "data"))
    extra = [
        {"_id": "70", "title": "", "text": "   "},
        {"_id": "80", "title": "Tides", "text": "Tides: the moon pulls the oceans twice a day."},
    ]
    with gzip.open(root / "corpus.jsonl.gz", "at") as out:
        out.write("".join(json.dumps(d) + "\n" for d in extra))
    data = load_beir(root)
    tides = next(doc for doc in data.corpus if doc.id == "80")
    assert tides.text_for_indexing == "Tides: the moon pulls the oceans twice a day."
    result = await run_evaluation(EvalConfig(dataset_dir=root), embedding_model=model)
    assert (result.documents, result.empty_documents) == (8, 1)
    assert result.chunks == 7


async def test_progress_prints_lines_when_stderr_is_not_a_terminal(
    beir_dir: Path, model: EmbeddingModelBase, capsys: pytest.CaptureFixture[str]
) -> None:
    await run_evaluation(EvalConfig(dataset_dir=beir_dir), embedding_model=model, progress=True)
    err = capsys.readouterr().err
    assert "indexing: 6/6 docs" in err


async def test_an_indexed_quantized_store_can_be_evaluated(
    beir_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", str(beir_dir), "--json", "--cache-dir", str(tmp_path / "c")]
    args = _parse([*argv, "--segment-points", "2", "--quantization", "int8"])
    assert await args.handler(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["config"]["segment_points"] == 2
    assert payload["config"]["quantization"] == "int8"
    assert payload["metrics"]["MRR@10"] == 1.0


def test_a_segment_of_no_points_is_rejected() -> None:
    with pytest.raises(ValueError, match="segment_points"):
        EvalConfig(dataset_dir=Path("."), segment_points=0)


async def test_evaluation_on_pgvector_leaves_no_table_behind(
    beir_dir: Path, model: EmbeddingModelBase
) -> None:
    """The same scores from PostgreSQL + pgvector, in tables of the run's own that are dropped
    afterwards."""
    import psycopg

    from pgvector_server import fresh_database, pgvector_server

    with pgvector_server() as server:
        url = fresh_database(server, "eval_run")
        config = EvalConfig(dataset_dir=beir_dir, pgvector_url=url)
        result = await run_evaluation(config, embedding_model=model)
        assert result.metrics["Recall@10"] == 1.0
        with psycopg.connect(url) as connection:
            rows = connection.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE 'eval\\_%'"
            ).fetchall()
    assert [row[0] for row in rows if not row[0].endswith("_collections")] == []
