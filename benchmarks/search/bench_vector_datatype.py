"""What the dense vectors' storage datatype costs a search: float32 against float16.

A collection under the store's segment size (20,000 points) is one unindexed segment that
every dense search scans whole. This builds two Qdrant Edge shards from the same random unit
vectors, laid out as `QdrantStore` lays out its default collections (originals on disk, int8
quantization built with the index), one storing float32 and one float16, and times the same
queries on both, alternating query by query so machine noise hits them alike. It also reports
how many of float32's top 10 float16 finds.

    python -m benchmarks vector_datatype --points 2000 10000
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from typing import Any

import numpy as np
import qdrant_edge as edge
from _common import write_result

from archivist.rag.store.core.datatype import VectorDatatype
from archivist.rag.store.qdrant.edge.collection import SEARCH_THREADS, edge_config
from archivist.rag.store.qdrant.edge.meta import EdgeMeta
from archivist.rag.store.qdrant.edge.optimizer import SEGMENT_POINTS

DIMENSIONS = 384
DATATYPES: tuple[VectorDatatype, ...] = ("float32", "float16")


def shard(directory: str, datatype: VectorDatatype, vectors: np.ndarray) -> Any:
    """A shard holding `vectors` as `datatype`, in one unindexed segment, configured as the
    store configures its default collections."""
    meta = EdgeMeta(
        dimensions=DIMENSIONS, distance="Cosine", shard="bench", quantized=True, datatype=datatype
    )
    config = edge_config(meta, SEGMENT_POINTS, SEARCH_THREADS, wal=False)
    created = edge.EdgeShard.create(directory, config)
    for start in range(0, len(vectors), 1_000):
        points = [
            edge.Point(i, vectors[i].tolist(), {})
            for i in range(start, min(len(vectors), start + 1_000))
        ]
        created.update(edge.UpdateOperation.upsert_points(points))
    return created


def bench(points: int, queries: int, rounds: int) -> dict[str, Any]:
    """Search p50 per datatype on `points` vectors, and float16's top-10 overlap."""
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((points, DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    asked = rng.standard_normal((queries, DIMENSIONS)).astype(np.float32)
    asked /= np.linalg.norm(asked, axis=1, keepdims=True)
    with tempfile.TemporaryDirectory() as directory:
        shards = {
            name: shard(f"{directory}/{name}", name, vectors) for name in DATATYPES
        }
        times: dict[str, list[float]] = {name: [] for name in shards}
        found: dict[str, list[set[int]]] = {name: [] for name in shards}
        for round_ in range(rounds):
            for query in asked:
                request = edge.QueryRequest(
                    limit=10, query=edge.Query.Nearest(query.tolist()), with_payload=False
                )
                for name, each in shards.items():
                    tick = time.perf_counter()
                    hits = each.query(request)
                    times[name].append(1000 * (time.perf_counter() - tick))
                    if round_ == 0:
                        found[name].append({int(hit.id) for hit in hits})
        for each in shards.values():
            each.close()
    overlap = statistics.mean(
        len(a & b) / 10 for a, b in zip(found["float32"], found["float16"], strict=True)
    )
    p50 = {name: statistics.median(values) for name, values in times.items()}
    return {
        "points": points,
        **{f"{name}_p50_ms": round(value, 3) for name, value in p50.items()},
        "float16_over_float32": round(p50["float16"] / p50["float32"], 2),
        "top10_overlap": round(overlap, 4),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, nargs="+", default=[2_000, 10_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    results = [bench(points, args.queries, args.rounds) for points in args.points]
    for result in results:
        print(result)
    write_result("vector_datatype", {"results": results})


if __name__ == "__main__":
    main()
