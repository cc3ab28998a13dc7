"""Ranking metrics with trec_eval's conventions: nDCG@k (graded gains), Recall@k, MRR@k.

A run maps each query id to `{document id: score}`. Documents are ranked by score, ties
broken by document id descending, exactly as trec_eval (and so pytrec_eval / ir-measures)
does, so the numbers are comparable with published ones. A relevance grade <= 0 counts as
not relevant. Queries without any relevant judgment are skipped; a judged query missing
from the run scores 0 (trec_eval would silently leave it out and inflate the mean).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Run = Mapping[str, Mapping[str, float]]
QrelsLike = Mapping[str, Mapping[str, int]]

DEFAULT_METRICS: tuple[str, ...] = ("nDCG@10", "Recall@10", "Recall@100", "MRR@10")


def rank(scores: Mapping[str, float]) -> list[str]:
    """Document ids best first; equal scores ordered by id descending (trec_eval's order)."""
    return [doc for doc, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def ndcg_at(ranking: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    """nDCG@k with gain = relevance grade and discount 1/log2(rank + 1)."""
    dcg = sum(
        max(judgments.get(doc, 0), 0) / math.log2(position + 2)
        for position, doc in enumerate(ranking[:k])
    )
    ideal_gains = sorted((g for g in judgments.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(position + 2) for position, g in enumerate(ideal_gains))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranking: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found in the top k."""
    relevant = {doc for doc, grade in judgments.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mrr_at(ranking: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    """1 / rank of the first relevant document within the top k, else 0."""
    for position, doc in enumerate(ranking[:k]):
        if judgments.get(doc, 0) > 0:
            return 1.0 / (position + 1)
    return 0.0


_FUNCTIONS = {"ndcg": ndcg_at, "recall": recall_at, "mrr": mrr_at}


def parse_metric(name: str) -> tuple[str, int]:
    """`"nDCG@10"` → `("ndcg", 10)`; unknown names or cut-offs are a ValueError."""
    family, _, cutoff = name.partition("@")
    key = family.lower()
    if key not in _FUNCTIONS or not cutoff.isdigit() or int(cutoff) < 1:
        raise ValueError(f"unknown metric {name!r}; use nDCG@k, Recall@k or MRR@k")
    return key, int(cutoff)


def per_query(
    run: Run, qrels: QrelsLike, metrics: Sequence[str] = DEFAULT_METRICS
) -> dict[str, dict[str, float]]:
    """Each metric for each query that has at least one relevant judgment."""
    parsed = [(name, *parse_metric(name)) for name in metrics]
    results: dict[str, dict[str, float]] = {}
    for query_id, judgments in qrels.items():
        if not any(grade > 0 for grade in judgments.values()):
            continue
        ranking = rank(run.get(query_id, {}))
        results[query_id] = {
            name: _FUNCTIONS[key](ranking, judgments, cutoff) for name, key, cutoff in parsed
        }
    return results


def evaluate(
    run: Run, qrels: QrelsLike, metrics: Sequence[str] = DEFAULT_METRICS
) -> dict[str, float]:
    """The mean of each metric over the judged queries (0.0 for every metric when none)."""
    scores = per_query(run, qrels, metrics)
    if not scores:
        return dict.fromkeys(metrics, 0.0)
    return {name: sum(s[name] for s in scores.values()) / len(scores) for name in metrics}
