"""Ranking and relevance of every shipped model, judged set and search mode, end to end.

    .venv/bin/python -m benchmarks relevance_modes [--models A,B] [--sets A,B]

`archivist eval --calibration` as a user runs it (Qdrant Edge, the knowledge base's search)
on the queries that checked the relevance curves and never fitted them: SciFact's *test*
split, and the fifth of CMRC 2018 trial's queries kept aside (`calibrate_relevance`). For
each model, set and mode: nDCG@10, the expected calibration error of the first ten hits,
the right answers ranked first shown at relevance 0.25 or more, and the reliability table.
Writes results/relevance-modes.json.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from typing import Any

from _common import DATASETS, write_result
from calibrate_relevance import MODELS, SETS, held_aside

from archivist.cli.home import cache_dir
from archivist.eval import EvalConfig, load_beir, run_evaluation
from archivist.eval.dataset import BEIRDataset

MODES = ("hybrid", "dense", "sparse")


def checking(dataset: str) -> BEIRDataset:
    """The queries of `dataset` that check the curves (and every document)."""
    if (DATASETS / dataset / "qrels" / "train.tsv").is_file():
        return load_beir(DATASETS / dataset, "test")
    data = load_beir(DATASETS / dataset, "test")
    queries = [q for q in data.queries if held_aside(q.id)]
    return BEIRDataset(
        name=data.name,
        corpus=data.corpus,
        queries=queries,
        qrels={q.id: data.qrels[q.id] for q in queries},
    )


async def measure(model: str, dataset: str) -> list[dict[str, Any]]:
    data = checking(dataset)
    runs = []
    for mode in MODES:
        config = EvalConfig(
            dataset_dir=DATASETS / dataset,
            embedding_model=model,
            mode=mode,
            cache_dir=cache_dir(),
            calibration=True,
        )
        result = await run_evaluation(config, dataset=data)
        assert result.calibration is not None
        c = result.calibration
        runs.append(
            {
                "model": model,
                "dataset": dataset,
                "mode": mode,
                "queries": result.queries,
                "ndcg@10": round(result.metrics["nDCG@10"], 4),
                "ece": round(c.expected_calibration_error, 4),
                "right_first": c.right_first,
                "right_first_at_threshold": c.right_first_at_threshold,
                "bins": [b.model_dump() for b in c.bins],
            }
        )
        kept = f"{c.right_first_at_threshold}/{c.right_first}"
        print(
            f"{model} {dataset} {mode}: nDCG@10 {runs[-1]['ndcg@10']:.4f} "
            f"ECE {c.expected_calibration_error:.3f} right first >= 0.25: {kept}",
            flush=True,
        )
    return runs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--sets", default=",".join(SETS))
    args = parser.parse_args(argv)
    # A set in a language the model cannot read says so once per document: not news here.
    logging.getLogger("archivist").setLevel(logging.ERROR)
    runs = []
    for model in args.models.split(","):
        for dataset in args.sets.split(","):
            if (DATASETS / dataset).is_dir():
                runs += asyncio.run(measure(model, dataset))
            else:
                print(f"skipped {dataset}: {DATASETS / dataset} is absent")
    write_result("relevance-modes", {"runs": runs})


if __name__ == "__main__":
    main()
