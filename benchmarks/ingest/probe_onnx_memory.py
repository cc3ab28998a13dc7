"""Peak RSS and wall time of the default local model alone, per set of onnxruntime options.

The model embeds the chunk texts of the 300-document SciFact ingest, under one batching plan
and one set of onnxruntime options per process.

Embeds the texts in windows of 256 (as the write path does) and prints one JSON line: model
footprint after a warm-up (`model_mb`), peak RSS, seconds, and the largest batch × sequence shape
the session received. Each option is one candidate of the memory investigation:

    .venv/bin/python -m benchmarks probe_onnx_memory --batch-size 8 --token-budget 0
    .venv/bin/python -m benchmarks probe_onnx_memory --batch-size 32 --token-budget 1024
    .venv/bin/python -m benchmarks probe_onnx_memory --shrink-arena --no-mem-pattern \\
        --same-as-requested --threads 1 --no-arena --opt-level basic --no-constant-folding

`--token-budget 0` switches the budget off (plain `batch_size` slices of length-sorted texts).
`--compare-speed ROUNDS` measures throughput instead: the previous default (batch of 8, constant
folding and memory pattern on, no budget) and the given settings embed the same windows in turn
in one process, so both see the same machine load; it prints the seconds of each and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
from typing import Any

import onnxruntime as ort  # type: ignore[import-untyped]
from bench_memory import scifact_files

WINDOW = 256
OPT_LEVELS = {
    "off": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def patch_session(args: argparse.Namespace, shapes: list[tuple[int, int]]) -> None:
    """Make every InferenceSession the model creates use the probe's options and record the
    shape of each batch it runs."""
    base = ort.InferenceSession
    if args.same_as_requested:
        # A process-wide CPU arena that grows by what is asked, not by powers of two; sessions
        # opt in with session.use_env_allocators.
        info = ort.OrtMemoryInfo(
            "Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT
        )
        ort.create_and_register_allocator(info, ort.OrtArenaCfg(0, 1, -1, -1))

    class Probe(base):  # type: ignore[misc, valid-type]
        def __init__(self, path: str, sess_options: Any = None, **kwargs: Any) -> None:
            options = sess_options or ort.SessionOptions()
            if args.no_mem_pattern:
                options.enable_mem_pattern = False
            if args.no_arena:
                options.enable_cpu_mem_arena = False
            if args.same_as_requested:
                options.add_session_config_entry("session.use_env_allocators", "1")
            if args.threads:
                options.intra_op_num_threads = args.threads
            if args.opt_level:
                options.graph_optimization_level = OPT_LEVELS[args.opt_level]
            if args.no_constant_folding:
                kwargs["disabled_optimizers"] = ["ConstantFolding"]
            super().__init__(path, sess_options=options, **kwargs)

        def run(self, outputs: Any, feed: Any, run_options: Any = None) -> Any:
            shapes.append(tuple(feed["input_ids"].shape))
            if args.shrink_arena:
                run_options = ort.RunOptions()
                run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
            return super().run(outputs, feed, run_options)

    ort.InferenceSession = Probe


async def chunk_texts(count: int) -> list[str]:
    """The chunk texts the 300-document ingest embeds (TextParser, ApproxTokenChunker 256/32)."""
    from archivist.rag import ApproxTokenChunker, TextParser

    parser, chunker = TextParser(), ApproxTokenChunker(256, 32)
    texts: list[str] = []
    for path in scifact_files(count):
        for chunk in await chunker.chunk(await parser.parse(str(path), path.name)):
            texts.append(chunk.content.text)  # type: ignore[union-attr]
    return texts


def model_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The `LocalEmbeddingModel` settings the command line asks for."""
    overrides: dict[str, Any] = {"batch_size": args.batch_size}
    if args.token_budget is not None:
        overrides["token_budget"] = args.token_budget or None
    if args.fold_constants:
        overrides["fold_constants"] = True
    return overrides


async def probe(args: argparse.Namespace) -> dict[str, Any]:
    from archivist.embedding import LocalEmbeddingModel

    shapes: list[tuple[int, int]] = []
    patch_session(args, shapes)
    texts = await chunk_texts(args.documents)
    model = LocalEmbeddingModel(**model_overrides(args))
    await model(["warm-up"])
    model_mb = peak_mb()
    shapes.clear()
    started = time.perf_counter()
    for start in range(0, len(texts), WINDOW):
        await model(texts[start : start + WINDOW])
    seconds = time.perf_counter() - started
    return {
        "options": {k: v for k, v in vars(args).items() if v},
        "texts": len(texts),
        "batches": len(shapes),
        "largest_shape": max(shapes, key=lambda s: s[0] * s[1]),
        "seconds": round(seconds, 1),
        "texts_per_s": round(len(texts) / seconds, 2),
        "model_mb": model_mb,
        "peak_mb": peak_mb(),
    }


async def compare_speed(args: argparse.Namespace) -> dict[str, Any]:
    """Seconds of the old default and of the probed settings on the same windows, alternated."""
    import dataclasses

    from archivist.embedding import LocalEmbeddingModel

    texts = await chunk_texts(args.documents)
    old = LocalEmbeddingModel(batch_size=8, token_budget=None, fold_constants=True)
    runtime = old._load()
    options = ort.SessionOptions()
    options.intra_op_num_threads = runtime.session.get_session_options().intra_op_num_threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        str(old.model_path), sess_options=options, providers=["CPUExecutionProvider"]
    )
    old._runtime = dataclasses.replace(runtime, session=session)
    new = LocalEmbeddingModel(**model_overrides(args))
    models = {"old": old, "new": new}
    seconds = dict.fromkeys(models, 0.0)
    for model in models.values():
        await model(texts[:WINDOW])  # warm both on the widest shapes
    for round_ in range(args.compare_speed):
        for number, start in enumerate(range(0, len(texts), WINDOW)):
            names = ["old", "new"] if (round_ + number) % 2 == 0 else ["new", "old"]
            for name in names:
                started = time.perf_counter()
                await models[name](texts[start : start + WINDOW])
                seconds[name] += time.perf_counter() - started
    return {
        "options": {k: v for k, v in vars(args).items() if v},
        "texts": len(texts) * args.compare_speed,
        "old_seconds": round(seconds["old"], 1),
        "new_seconds": round(seconds["new"], 1),
        "throughput_ratio_new_to_old": round(seconds["old"] / seconds["new"], 3),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--token-budget", type=int, help="padded tokens per batch; 0 = off")
    parser.add_argument("--shrink-arena", action="store_true", help="RunOptions arena shrinkage")
    parser.add_argument("--no-mem-pattern", action="store_true", help="enable_mem_pattern=False")
    parser.add_argument("--no-arena", action="store_true", help="enable_cpu_mem_arena=False")
    parser.add_argument(
        "--same-as-requested", action="store_true", help="arena_extend_strategy kSameAsRequested"
    )
    parser.add_argument("--threads", type=int, help="intra_op_num_threads")
    parser.add_argument(
        "--no-constant-folding", action="store_true", help="disabled_optimizers=[ConstantFolding]"
    )
    parser.add_argument(
        "--fold-constants", action="store_true", help="the model's fold_constants=True"
    )
    parser.add_argument("--opt-level", choices=sorted(OPT_LEVELS), help="graph optimization")
    parser.add_argument("--compare-speed", type=int, metavar="ROUNDS")
    args = parser.parse_args(argv)
    work = compare_speed(args) if args.compare_speed else probe(args)
    print(json.dumps(asyncio.run(work)), flush=True)


if __name__ == "__main__":
    main()
