"""The engine's own optimizer, set up so that indexing costs the same at any collection size.

Written points go to one appendable segment. Once it holds `segment_points` vectors' worth of
data, the engine's indexing threshold is crossed and `EdgeShard.optimize()` turns that segment
into an indexed one; `max_segment_size` of the same size keeps the merge optimizer from folding
indexed segments together again. So each optimization indexes only what is new, and a
collection of N points ends up in about N / `segment_points` indexed segments.
"""

from __future__ import annotations

import qdrant_edge as edge

from archivist.rag.store.core.datatype import VectorDatatype

SEGMENT_POINTS = 20_000
"""Points per indexed segment unless the store is told otherwise."""


_BYTES: dict[VectorDatatype, int] = {"float32": 4, "float16": 2}


def segment_kilobytes(dimensions: int, points: int, datatype: VectorDatatype) -> int:
    """The engine's size unit (KB of stored dense vectors, `datatype` each) for `points` points."""
    return max(1, points * dimensions * _BYTES[datatype] // 1024)


def optimizers_config(
    dimensions: int, segment_points: int, datatype: VectorDatatype
) -> edge.EdgeOptimizersConfig:
    """Optimizer settings that index each segment once it holds `segment_points` points of
    `datatype` vectors.

    `prevent_unoptimized=False` keeps every written point searchable (by exact scan) before it
    is indexed, instead of hiding points of large unindexed segments.
    """
    size = segment_kilobytes(dimensions, segment_points, datatype)
    return edge.EdgeOptimizersConfig(
        max_segment_size=size, indexing_threshold=size, prevent_unoptimized=False
    )
