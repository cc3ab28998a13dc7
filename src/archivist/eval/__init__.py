"""Retrieval evaluation: load a BEIR dataset, index it through a KnowledgeBase, score search.

`run_evaluation(EvalConfig(dataset_dir=...))` returns nDCG@10, Recall@10, Recall@100 and
MRR@10; the metric functions follow trec_eval's conventions so numbers match published ones.
"""

from archivist.eval.dataset import (
    BEIRDataset,
    CorpusDocument,
    EvalQuery,
    Qrels,
    load_beir,
    load_qrels,
)
from archivist.eval.metrics import (
    DEFAULT_METRICS,
    evaluate,
    mrr_at,
    ndcg_at,
    per_query,
    rank,
    recall_at,
)
from archivist.eval.runner import (
    EvalConfig,
    EvalResult,
    chunk_documents,
    document_section,
    index_corpus,
    rank_documents,
    results_table,
    run_evaluation,
)

__all__ = [
    "DEFAULT_METRICS",
    "BEIRDataset",
    "CorpusDocument",
    "EvalConfig",
    "EvalQuery",
    "EvalResult",
    "Qrels",
    "chunk_documents",
    "document_section",
    "evaluate",
    "index_corpus",
    "load_beir",
    "load_qrels",
    "mrr_at",
    "ndcg_at",
    "per_query",
    "rank",
    "rank_documents",
    "recall_at",
    "results_table",
    "run_evaluation",
]
