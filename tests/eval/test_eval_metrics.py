"""The metric code against hand-computed numbers and against ir-measures (pytrec_eval)."""

import math

import pytest

from archivist.eval import evaluate, mrr_at, ndcg_at, per_query, rank, recall_at

QRELS = {
    "q1": {"d1": 2, "d2": 1, "d3": 0, "d4": 1},
    "q2": {"d7": 1},
    "q3": {"d9": 1},
    "q4": {"a": 1},
}
RUN = {
    "q1": {"d3": 0.9, "d1": 0.8, "d5": 0.7, "d2": 0.6},
    "q2": {"d7": 0.3, "d8": 0.2},
    "q3": {"d8": 0.5},
    "q4": {"a": 0.5, "b": 0.5},  # a tie: trec_eval ranks b (larger id) first
}

# q1: ranking d3 (0), d1 (2), d5 (-), d2 (1); judged relevant d1, d2, d4 (gains 2, 1, 1).
Q1_DCG = 2 / math.log2(3) + 1 / math.log2(5)
Q1_IDCG = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
HAND = {
    "q1": {"nDCG@10": Q1_DCG / Q1_IDCG, "Recall@10": 2 / 3, "Recall@100": 2 / 3, "MRR@10": 1 / 2},
    "q2": {"nDCG@10": 1.0, "Recall@10": 1.0, "Recall@100": 1.0, "MRR@10": 1.0},
    "q3": {"nDCG@10": 0.0, "Recall@10": 0.0, "Recall@100": 0.0, "MRR@10": 0.0},
    "q4": {"nDCG@10": 1 / math.log2(3), "Recall@10": 1.0, "Recall@100": 1.0, "MRR@10": 1 / 2},
}


def test_hand_computed_per_query() -> None:
    assert pytest.approx(0.540586, abs=1e-6) == Q1_DCG / Q1_IDCG
    scores = per_query(RUN, QRELS)
    assert scores.keys() == HAND.keys()
    for query, expected in HAND.items():
        assert scores[query] == pytest.approx(expected), query


def test_means_are_over_judged_queries() -> None:
    means = evaluate(RUN, QRELS)
    for metric in ("nDCG@10", "Recall@10", "Recall@100", "MRR@10"):
        assert means[metric] == pytest.approx(sum(h[metric] for h in HAND.values()) / 4)


def test_cutoffs_apply() -> None:
    ranking = rank(RUN["q1"])
    assert ranking == ["d3", "d1", "d5", "d2"]
    assert recall_at(ranking, QRELS["q1"], 2) == pytest.approx(1 / 3)
    assert mrr_at(ranking, QRELS["q1"], 1) == 0.0
    assert ndcg_at(ranking, QRELS["q1"], 1) == 0.0
    assert ndcg_at(ranking, QRELS["q1"], 2) == pytest.approx(
        (2 / math.log2(3)) / (2 + 1 / math.log2(3))
    )


def test_missing_query_scores_zero_and_unjudged_query_is_skipped() -> None:
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 0}}
    means = evaluate({"q1": {"d1": 1.0}}, qrels, ["nDCG@10", "MRR@10"])
    assert means == {"nDCG@10": 0.5, "MRR@10": 0.5}
    assert set(per_query({}, qrels)) == {"q1", "q2"}


def test_empty_and_unknown_metrics() -> None:
    assert evaluate({}, {}) == {"nDCG@10": 0.0, "Recall@10": 0.0, "Recall@100": 0.0, "MRR@10": 0.0}
    with pytest.raises(ValueError, match="unknown metric"):
        evaluate(RUN, QRELS, ["MAP@10"])
    with pytest.raises(ValueError, match="unknown metric"):
        evaluate(RUN, QRELS, ["nDCG"])


def test_matches_ir_measures() -> None:
    ir_measures = pytest.importorskip("ir_measures")
    measures = [
        ir_measures.nDCG @ 10,
        ir_measures.R @ 10,
        ir_measures.R @ 100,
        ir_measures.RR @ 10,
    ]
    names = {"nDCG@10": "nDCG@10", "R@10": "Recall@10", "R@100": "Recall@100", "RR@10": "MRR@10"}
    # ir-measures' RR does not order tied scores like trec_eval, so q4 (a tie) is checked
    # for nDCG only, which it computes through pytrec_eval.
    theirs: dict[str, dict[str, float]] = {}
    for metric in ir_measures.iter_calc(measures, QRELS, RUN):
        theirs.setdefault(metric.query_id, {})[names[str(metric.measure)]] = metric.value
    ours = per_query(RUN, QRELS)
    assert theirs.keys() == ours.keys()
    for query in ("q1", "q2", "q3"):
        assert ours[query] == pytest.approx(theirs[query], abs=1e-9), query
    assert ours["q4"]["nDCG@10"] == pytest.approx(theirs["q4"]["nDCG@10"], abs=1e-9)
    untied = {q: RUN[q] for q in ("q1", "q2", "q3")}
    qrels = {q: QRELS[q] for q in untied}
    assert evaluate(untied, qrels) == pytest.approx(
        {names[str(m)]: v for m, v in ir_measures.calc_aggregate(measures, qrels, untied).items()}
    )
