"""Fit and check the relevance calibration (`archivist.rag.store.core.relevance`) on BEIR SciFact.

    .venv/bin/python -m benchmarks calibrate_relevance [--train N] [--test N]

Indexes the whole SciFact corpus into Qdrant Edge (exact search, embeddings from the shared
disk cache) and, for every *train* query, gathers the candidates each mode ranks: the best
100 chunks by dense similarity, the best 100 by BM25, and (hybrid) both together. Each
candidate's evidence is computed as the store computes it (`archivist.rag.store.core.ranking`:
cosine similarity from the stored vector; BM25 from the stored term weights as a share of
the best a chunk could reach; coverage) and recorded against the judgments; one logistic
curve per mode is fitted on its candidates (hybrid: all three signals; dense: similarity;
sparse: lexical).
The *test* queries only check the result (the train queries' nDCG@10 is printed beside it,
the one to choose between signals by): log-loss, Brier score and ROC AUC of the test
candidates, the observed share of relevant hits per relevance bin among each test query's
top 10 as ranked, nDCG@10 of that ranking, and how often the default threshold keeps a
relevant hit (and clears a hit when the relevant documents are taken out).

For comparison it also fits, on the same candidates, the other combinations of the three
signals (similarity, lexical match, and coverage: the IDF-weighted share of the query's
terms a chunk holds, presence only). Prints the fitted constants and writes
results/relevance-calibration.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _common import write_result

from archivist.cli.home import cache_dir
from archivist.embedding import CachedEmbeddingModel, LocalEmbeddingModel
from archivist.eval.dataset import BEIRDataset, load_beir
from archivist.eval.metrics import ndcg_at
from archivist.eval.runner import COLLECTION, index_corpus
from archivist.rag import KnowledgeBase
from archivist.rag.chunker import chunker_for
from archivist.rag.store.core.bm25 import SparseVector
from archivist.rag.store.core.layout import CHUNK_INDEX, DOCUMENT_ID
from archivist.rag.store.core.ranking import cosine, lexical_evidence
from archivist.rag.store.core.relevance import DEFAULT_MIN_RELEVANCE
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant.backend import SearchRequest
from archivist.rag.store.qdrant.filter import Where

HERE = Path(__file__).parent
SCIFACT = HERE.parent.parent / "shared" / "datasets" / "scifact"
DEPTH = 100
FITS: dict[str, tuple[str, tuple[str, ...]]] = {
    # what the library uses (`relevance.HYBRID`, `DENSE`, `SPARSE`)
    "hybrid": ("hybrid", ("similarity", "lexical", "coverage")),
    "dense": ("dense", ("similarity",)),
    "sparse": ("sparse", ("lexical",)),
    # the other options, for comparison
    "hybrid_without_coverage": ("hybrid", ("similarity", "lexical")),
    "hybrid_without_lexical": ("hybrid", ("similarity", "coverage")),
    "sparse_with_coverage": ("sparse", ("lexical", "coverage")),
    "sparse_coverage_only": ("sparse", ("coverage",)),
}


def fit_logistic(x: np.ndarray, y: np.ndarray, iterations: int = 50) -> np.ndarray:
    """Weights (last = bias) of a logistic regression by Newton's method, lightly L2-damped."""
    design = np.hstack([x, np.ones((len(x), 1))])
    weights = np.zeros(design.shape[1])
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-design @ weights))
        gradient = design.T @ (y - p) - 1e-3 * weights
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + 1e-3 * np.eye(len(weights))
        step = np.linalg.solve(hessian, gradient)
        weights += step
        if np.abs(step).max() < 1e-8:
            break
    return weights


def predict(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.asarray(1 / (1 + np.exp(-(x @ weights[:-1] + weights[-1]))))


async def candidates(
    store: QdrantStore, model: CachedEmbeddingModel, data: BEIRDataset
) -> list[dict[str, Any]]:
    """Per query, each mode's candidates with their evidence and judgment."""
    backend = store._open()
    params = await store._require(COLLECTION)
    encoder = store._encoder(params)
    everything = Where(())
    rows = []
    for query in data.queries:
        vector = list((await model([query.text], input_type="query")).embeddings[0])
        norm = math.hypot(*vector)
        terms = encoder.query(query.text)
        idf = await store.query_term_weights(COLLECTION, query.text)
        sides = {
            "dense": SearchRequest(DEPTH, everything, dense=vector, with_vectors=True),
            "sparse": SearchRequest(DEPTH, everything, sparse=terms, with_vectors=True),
        }
        found: dict[str, dict[str, Any]] = {}
        for side, request in sides.items():
            if side == "sparse" and not terms.indices:
                continue
            for hit in await backend.search(COLLECTION, request):
                entry = found.get(hit.id)
                if entry is None:
                    match, held = lexical_evidence(idf, hit.weights or SparseVector([], []))
                    entry = found[hit.id] = {
                        "document": str(hit.payload[DOCUMENT_ID]),
                        "chunk": int(hit.payload[CHUNK_INDEX]),
                        "similarity": cosine(vector, hit.vector or [], norm),
                        "lexical": match or 0.0,
                        "coverage": held or 0.0,
                        "sides": [],
                    }
                entry["sides"].append(side)
        judged = data.qrels.get(query.id, {})
        for entry in found.values():
            entry["relevant"] = judged.get(entry["document"], 0) > 0
        rows.append({"query": query.id, "judged": judged, "candidates": list(found.values())})
    return rows


def pool(rows: list[dict[str, Any]], mode: str) -> list[list[dict[str, Any]]]:
    """Each query's candidates in `mode` (hybrid: all of them)."""
    return [
        [c for c in row["candidates"] if mode == "hybrid" or mode in c["sides"]] for row in rows
    ]


def matrix(
    pools: list[list[dict[str, Any]]], signals: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray]:
    hits = [c for candidates in pools for c in candidates]
    x = np.asarray([[c[s] for s in signals] for c in hits], dtype=float)
    y = np.asarray([c["relevant"] for c in hits], dtype=float)
    return x, y


def reliability(p: np.ndarray, y: np.ndarray) -> list[dict[str, Any]]:
    """Observed share of relevant hits per predicted-relevance bin."""
    bins = []
    for low in np.arange(0, 1, 0.2):
        inside = (p >= low) & (p < low + 0.2 + (1e-9 if low >= 0.8 else 0))
        if inside.any():
            bins.append(
                {
                    "bin": f"{low:.1f}-{low + 0.2:.1f}",
                    "hits": int(inside.sum()),
                    "predicted": round(float(p[inside].mean()), 3),
                    "observed": round(float(y[inside].mean()), 3),
                }
            )
    return bins


def scores(p: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Log-loss, Brier score and ROC AUC of predictions `p` for outcomes `y`."""
    clipped = np.clip(p, 1e-6, 1 - 1e-6)
    log_loss = -np.mean(y * np.log(clipped) + (1 - y) * np.log(1 - clipped))
    order = np.argsort(p)
    ranks = np.empty(len(p))
    ranks[order] = np.arange(1, len(p) + 1)
    positives = y == 1
    n_pos, n_neg = int(positives.sum()), int((~positives).sum())
    auc = (ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg) if n_pos else 0.0
    return {
        "log_loss": round(float(log_loss), 4),
        "brier": round(float(np.mean((p - y) ** 2)), 4),
        "auc": round(float(auc), 4),
    }


def ranked_check(
    rows: list[dict[str, Any]],
    pools: list[list[dict[str, Any]]],
    relevance_of: Callable[[dict[str, Any]], float],
    threshold: float,
) -> dict[str, Any]:
    """Rank each query's candidates by `relevance_of`: nDCG@10 by document, reliability of
    the top 10, and what the threshold keeps."""
    ndcg, top_p, top_y = [], [], []
    kept_relevant = cleared_without = 0
    for row, candidates in zip(rows, pools, strict=True):
        ranked = sorted(candidates, key=lambda c: -relevance_of(c))
        documents = list(dict.fromkeys(c["document"] for c in ranked))
        ndcg.append(ndcg_at(documents, row["judged"], 10))
        for c in ranked[:10]:
            top_p.append(relevance_of(c))
            top_y.append(c["relevant"])
        relevant = [relevance_of(c) for c in ranked if c["relevant"]]
        others = [relevance_of(c) for c in ranked if not c["relevant"]]
        kept_relevant += bool(relevant) and max(relevant) >= threshold
        cleared_without += bool(others) and max(others) >= threshold
    return {
        "ndcg@10": round(float(np.mean(ndcg)), 4),
        "top10_reliability": reliability(np.asarray(top_p), np.asarray(top_y, dtype=float)),
        "best_relevant_hit_clears_threshold": round(kept_relevant / len(rows), 3),
        "a_hit_clears_threshold_without_the_relevant_documents": round(
            cleared_without / len(rows), 3
        ),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    test = load_beir(args.dataset, "test")
    train = load_beir(args.dataset, "train")
    train = train.subset(args.train) if args.train else train
    test = test.subset(args.test) if args.test else test
    model = CachedEmbeddingModel(LocalEmbeddingModel(), args.cache)
    chunker = chunker_for(model.chunk_tokenizer(), None, 32)
    out: dict[str, Any] = {"train_queries": len(train.queries), "test_queries": len(test.queries)}
    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
        kb = KnowledgeBase("scifact", "scifact", model, store, COLLECTION)
        started = time.perf_counter()
        out["chunks"] = await index_corpus(kb, test.corpus, chunker)
        out["index_seconds"] = round(time.perf_counter() - started, 1)
        train_rows = await candidates(store, model, train)
        test_rows = await candidates(store, model, test)
    out["fits"] = {}
    for name, (mode, signals) in FITS.items():
        x, y = matrix(pool(train_rows, mode), signals)
        weights = fit_logistic(x, y)
        test_pools = pool(test_rows, mode)
        tx, ty = matrix(test_pools, signals)

        def relevance_of(
            c: dict[str, Any], w: np.ndarray = weights, signals: tuple[str, ...] = signals
        ) -> float:
            return float(predict(w, np.asarray([[c[s] for s in signals]]))[0])

        out["fits"][name] = {
            "mode": mode,
            "signals": list(signals),
            "weights": [round(float(w), 2) for w in weights],
            "train_candidates": len(y),
            "train_ndcg@10": ranked_check(
                train_rows, pool(train_rows, mode), relevance_of, args.threshold
            )["ndcg@10"],
            "test_scores": scores(predict(weights, tx), ty),
            "test_ranked": ranked_check(test_rows, test_pools, relevance_of, args.threshold),
        }
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--train", type=int, default=None, help="first N train queries")
    parser.add_argument("--test", type=int, default=None, help="first N test queries")
    parser.add_argument("--threshold", type=float, default=DEFAULT_MIN_RELEVANCE)
    parser.add_argument("--cache", type=Path, default=cache_dir(), help="embedding cache")
    args = parser.parse_args(argv)
    if not (args.dataset / "qrels" / "train.tsv").is_file():
        print(f"no SciFact train split at {args.dataset}: skipped")
        return
    result = asyncio.run(run(args))
    write_result("relevance-calibration", result)
    print(json.dumps({k: v for k, v in result.items() if k != "fits"}))
    for name, fit in result["fits"].items():
        ranked = fit["test_ranked"]
        print(
            f"{name:20} {fit['mode']:7} weights {fit['weights']} {json.dumps(fit['test_scores'])}"
            f" train nDCG@10 {fit['train_ndcg@10']} test nDCG@10 {ranked['ndcg@10']}"
            f" keeps {ranked['best_relevant_hit_clears_threshold']}"
            f" clears-without {ranked['a_hit_clears_threshold_without_the_relevant_documents']}"
        )
        for row in ranked["top10_reliability"]:
            print("   ", row)


if __name__ == "__main__":
    main()
