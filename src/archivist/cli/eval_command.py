"""`archivist eval DATASET_DIR`: score retrieval on a BEIR-layout dataset, as a table or JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from archivist.cli.arguments import (
    CHUNKING_OPTIONS,
    add_chunking_arguments,
    add_option,
    chunk_settings,
    chunking_error,
)
from archivist.cli.home import cache_dir
from archivist.embedding.registry import list_embedding_models
from archivist.errors import InvalidArgumentError
from archivist.options import (
    CORPUS,
    EMBEDDING,
    EVAL_PGVECTOR_URL,
    MAX_PER_DOCUMENT,
    QUANTIZATION,
    QUERIES,
    SEARCH_DEPTH,
    SEGMENT_POINTS,
    VECTOR_DATATYPE,
)


def add_eval_command(commands: Any) -> None:
    """Register the `eval` sub-command."""
    cmd = commands.add_parser(
        "eval", help="measure retrieval quality on a BEIR dataset (nDCG@10, Recall, MRR)"
    )
    cmd.add_argument("dataset", type=Path, metavar="DATASET_DIR")
    cmd.add_argument("--split", default="test", help="qrels split (default: test)")
    add_option(cmd, QUERIES)
    add_option(cmd, CORPUS)
    cmd.add_argument("--seed", type=int, default=0, help="seed of the corpus sample")
    add_chunking_arguments(cmd, from_kb=False)
    cmd.add_argument(
        "--mode",
        choices=["hybrid", "dense", "sparse"],
        default="hybrid",
        help="search mode: dense + BM25 ranked together, dense vectors only, or BM25 only "
        "(default: hybrid)",
    )
    add_option(cmd, MAX_PER_DOCUMENT)
    cmd.add_argument("--run", type=Path, default=None, help="write a TREC run file here")
    cmd.add_argument(
        "--context-header",
        action="store_true",
        help="start each chunk with its document's title (a contextual chunk header)",
    )
    add_option(
        cmd,
        EMBEDDING,
        help=f"embedding model (known: {', '.join(list_embedding_models())})",
    )
    cmd.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="embedding cache directory (default: archivist's cache)",
    )
    cmd.add_argument("--no-cache", action="store_true", help="embed everything afresh")
    for option in (SEARCH_DEPTH, EVAL_PGVECTOR_URL, SEGMENT_POINTS, QUANTIZATION, VECTOR_DATATYPE):
        add_option(cmd, option)
    cmd.add_argument(
        "--calibration",
        action="store_true",
        help="also print the reliability of the relevance shown: the first 10 hits of each "
        "query binned by relevance, with the share judged relevant in each bin",
    )
    cmd.add_argument("--per-query", action="store_true", help="include per-query scores in JSON")
    cmd.add_argument("--json", action="store_true", help="print JSON for scripts")
    cmd.set_defaults(handler=run_eval)


async def run_eval(args: argparse.Namespace) -> int:
    """Index the dataset into a throw-away in-memory store, run its queries, print the scores."""
    from archivist.eval import EvalConfig, results_table, run_evaluation

    chunking = chunk_settings(args.chunk_size, args.overlap)
    config = EvalConfig(
        dataset_dir=args.dataset,
        split=args.split,
        chunk_size=chunking.chunk_size,
        overlap=chunking.overlap,
        embedding_model=args.embedding,
        queries=args.queries,
        corpus=args.corpus,
        seed=args.seed,
        cache_dir=None if args.no_cache else (args.cache_dir or cache_dir()),
        search_depth=args.depth,
        mode=args.mode,
        max_per_document=args.max_per_document,
        context_header=args.context_header,
        pgvector_url=args.pgvector_url,
        segment_points=args.segment_points,
        quantization=None if args.quantization == "none" else args.quantization,
        vector_datatype=args.vector_datatype,
        calibration=args.calibration,
    )
    try:
        result = await run_evaluation(config, progress=True, run_file=args.run)
    except InvalidArgumentError as exc:  # e.g. an overlap longer than the model's input
        if exc.argument in CHUNKING_OPTIONS:
            raise chunking_error(exc) from None
        raise
    if args.json:
        payload = result.model_dump(mode="json", exclude=None if args.per_query else {"per_query"})
        print(json.dumps(payload, indent=2))
    else:
        from rich.console import Console

        console = Console()
        console.print(results_table(result))
        if result.calibration is not None:
            from archivist.eval.calibration import calibration_table

            title = f"relevance shown vs judged ({result.config['embedding_model']})"
            console.print(calibration_table(result.calibration, title))
    return 0
