"""Fit and check the relevance calibration (`archivist.rag.store.relevance`) on BEIR SciFact.

    .venv/bin/python benchmarks/calibrate_relevance.py [--train 300] [--extra 1000]

Indexes the documents judged for the first `--train` *train* queries and for every *test*
query, plus `--extra` other documents (fixed seed), into Qdrant Edge. For the train queries'
top 10 hits in each mode it records the two signals of `relevance` — dense cosine similarity
and the IDF-weighted share of the query's terms in the chunk (and, for comparison, the plain
share of terms the library used before) — against the judgments, and fits one logistic curve
per combination of signals (both; similarity only; coverage only). The test queries are used
only to check it: log-loss, Brier score and ROC AUC, the observed share of relevant hits per
relevance bin, and, with each test query's relevant documents taken out of its results
("deleted"), how often a hit still clears the default threshold, beside how often a relevant
hit clears it when they are present.
Embeddings come from the shared disk cache. Prints the fitted constants and writes
results/relevance-calibration.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from archivist.embedding import CachedEmbeddingModel, LocalEmbeddingModel
from archivist.eval.dataset import BEIRDataset, load_beir
from archivist.eval.runner import index_corpus
from archivist.message import TextBlock
from archivist.rag import KnowledgeBase
from archivist.rag.chunker import chunker_for
from archivist.rag.store.base import SearchMode
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant.sparse import Bm25Encoder
from archivist.rag.store.relevance import DEFAULT_MIN_RELEVANCE

HERE = Path(__file__).parent
SCIFACT = HERE.parent.parent / "shared" / "datasets" / "scifact"
MODES: tuple[SearchMode, ...] = ("hybrid", "dense", "sparse")


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


def weighted_share(weights: dict[int, float], found: dict[int, int]) -> float:
    """The share of the known query terms' IDF mass that the chunk holds (the library's)."""
    mass = sum(weights.values())
    return sum(w for t, w in weights.items() if t in found) / mass if mass else 0.0


async def features(
    kb: KnowledgeBase,
    model: CachedEmbeddingModel,
    data: BEIRDataset,
    mode: SearchMode,
) -> list[dict[str, Any]]:
    """Per query, its top-10 hits with similarity, coverage (IDF-weighted, as the library
    computes it, and the plain share of terms it replaced) and the judgment."""
    encoder = Bm25Encoder()
    rows = []
    for query in data.queries:
        hits = await kb.search(query.text, top_k=10, mode=mode)
        if not hits:
            rows.append({"query": query.id, "hits": []})
            continue
        texts = [h.chunk.content.text for h in hits if isinstance(h.chunk.content, TextBlock)]
        vectors = np.asarray((await model(texts, input_type="document")).embeddings)
        qvec = np.asarray((await model([query.text], input_type="query")).embeddings[0])
        sims = vectors @ qvec / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(qvec))
        store = kb.vector_store
        assert isinstance(store, QdrantStore)
        terms = await store.query_term_weights(kb.collection, query.text)
        judged = data.qrels.get(query.id, {})
        rows.append(
            {
                "query": query.id,
                "hits": [
                    {
                        "document": hit.document_id,
                        "similarity": float(sim),
                        "coverage": weighted_share(terms, counts),
                        "coverage_plain": sum(t in counts for t in terms) / max(len(terms), 1),
                        "relevant": judged.get(hit.document_id, 0) > 0,
                        "relevance": hit.relevance,
                    }
                    for hit, text, sim in zip(hits, texts, sims, strict=True)
                    for counts in (encoder.count(text).counts,)
                ],
            }
        )
    return rows


def matrix(rows: list[dict[str, Any]], signals: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    hits = [h for row in rows for h in row["hits"]]
    x = np.asarray([[h[s] for s in signals] for h in hits], dtype=float)
    y = np.asarray([h["relevant"] for h in hits], dtype=float)
    return x, y


def reliability(p: np.ndarray, y: np.ndarray) -> list[dict[str, float]]:
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
    positives, negatives = p[y == 1], p[y == 0]
    pairs = positives[:, None] - negatives[None, :]
    auc = float(np.mean((pairs > 0) + 0.5 * (pairs == 0))) if pairs.size else float("nan")
    return {
        "log_loss": round(float(log_loss), 4),
        "brier": round(float(np.mean((p - y) ** 2)), 4),
        "auc": round(auc, 4),
    }


def deletion(
    rows: list[dict[str, Any]], weights: np.ndarray, signals: tuple[str, ...], threshold: float
) -> dict[str, float]:
    """With the relevant documents gone, how often the best remaining hit clears `threshold`;
    and, with them present, how often a relevant hit clears it."""
    cleared_gone = cleared_present = 0
    for row in rows:
        hits = row["hits"]
        scores = [float(predict(weights, np.asarray([[h[s] for s in signals]]))[0]) for h in hits]
        rest = [p for p, h in zip(scores, hits, strict=True) if not h["relevant"]]
        cleared_gone += bool(rest) and max(rest) >= threshold
        found = [p for p, h in zip(scores, hits, strict=True) if h["relevant"]]
        cleared_present += bool(found) and max(found) >= threshold
    return {
        "queries": len(rows),
        "something_clears_when_relevant_deleted": round(cleared_gone / len(rows), 3),
        "relevant_hit_clears_when_present": round(cleared_present / len(rows), 3),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    train = load_beir(args.dataset, "train")
    test = load_beir(args.dataset, "test").subset(args.test)
    train = BEIRDataset(
        name="train",
        corpus=train.corpus,
        queries=train.queries[: args.train],
        qrels={q.id: train.qrels[q.id] for q in train.queries[: args.train]},
    )
    judged = {d for data in (train, test) for j in data.qrels.values() for d in j}
    others = sorted(d.id for d in test.corpus if d.id not in judged)
    chosen = judged | set(random.Random(args.seed).sample(others, min(args.extra, len(others))))
    corpus = [d for d in test.corpus if d.id in chosen]
    model = CachedEmbeddingModel(LocalEmbeddingModel(), Path.home() / ".cache" / "archivist")
    chunker = chunker_for(model.chunk_tokenizer(), None, 32)
    out: dict[str, Any] = {"documents": len(corpus), "train_queries": len(train.queries)}
    async with QdrantStore(location=":memory:", auto_optimize_threshold=None) as store:
        kb = KnowledgeBase("scifact", "scifact", model, store, "scifact")
        started = time.perf_counter()
        out["chunks"] = await index_corpus(kb, corpus, chunker)
        out["index_seconds"] = round(time.perf_counter() - started, 1)
        train_rows = {m: await features(kb, model, train, m) for m in MODES}
        test_rows = {m: await features(kb, model, test, m) for m in MODES}
    models: dict[str, tuple[SearchMode, tuple[str, ...]]] = {
        "both": ("hybrid", ("similarity", "coverage")),
        "similarity_only": ("dense", ("similarity",)),
        "coverage_only": ("sparse", ("coverage",)),
        # the unweighted coverage the library used before, for comparison
        "both_plain": ("hybrid", ("similarity", "coverage_plain")),
        "coverage_plain_only": ("sparse", ("coverage_plain",)),
    }
    out["fits"] = {}
    for name, (mode, signals) in models.items():
        x, y = matrix(train_rows[mode], signals)
        weights = fit_logistic(x, y)
        tx, ty = matrix(test_rows[mode], signals)
        # The threshold that keeps the best relevant hit of 90% of the train queries that
        # found one: recall first, since an agent without the passage cannot answer.
        best = [
            max(float(predict(weights, np.asarray([[h[s] for s in signals]]))[0]) for h in hits)
            for row in train_rows[mode]
            if (hits := [h for h in row["hits"] if h["relevant"]])
        ]
        keep_90 = float(np.quantile(best, 0.1)) if best else 0.5
        out["fits"][name] = {
            "train_threshold_keeping_90pct": round(keep_90, 3),
            "test_deletion_at_that_threshold": deletion(
                test_rows[mode], weights, signals, round(keep_90, 2)
            ),
            "mode": mode,
            "weights": [round(float(w), 2) for w in weights],
            "train_hits": len(y),
            "test_reliability": reliability(predict(weights, tx), ty),
            "test_scores": scores(predict(weights, tx), ty),
            "test_deletion": deletion(test_rows[mode], weights, signals, args.threshold),
        }
    # The library's own relevance on the test hits (constants as shipped), for comparison.
    shipped = [
        (h["relevance"], h["relevant"])
        for row in test_rows["hybrid"]
        for h in row["hits"]
        if h["relevance"] is not None
    ]
    if shipped:
        p = np.asarray([s for s, _ in shipped])
        y = np.asarray([r for _, r in shipped], dtype=float)
        out["shipped_hybrid_reliability"] = reliability(p, y)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--train", type=int, default=300)
    parser.add_argument("--test", type=int, default=None, help="first N test queries")
    parser.add_argument("--extra", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--threshold", type=float, default=DEFAULT_MIN_RELEVANCE)
    args = parser.parse_args()
    if not (args.dataset / "qrels" / "train.tsv").is_file():
        print(f"no SciFact train split at {args.dataset}: skipped")
        return
    result = asyncio.run(run(args))
    (HERE / "results").mkdir(exist_ok=True)
    path = HERE / "results" / "relevance-calibration.json"
    path.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "fits"}, indent=2))
    for name, fit in result["fits"].items():
        print(
            name, fit["weights"], json.dumps(fit["test_scores"]), json.dumps(fit["test_deletion"])
        )
        for row in fit["test_reliability"]:
            print("   ", row)


if __name__ == "__main__":
    main()
