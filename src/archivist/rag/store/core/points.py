"""Vector records turned into the points of one write, after checking every record first."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from archivist.message import TextBlock
from archivist.rag.record import VectorRecord
from archivist.rag.store.core.arguments import check_records
from archivist.rag.store.core.bm25 import Bm25Encoder, SparseVector, TermCounts
from archivist.rag.store.core.layout import (
    TERM_LENGTH,
    chunk_metadata,
    generation_point_id,
    metadata_version,
    payload,
    point_id,
)
from archivist.validation import FilterValue


@dataclass(frozen=True)
class PointWrite:
    """One point to upsert."""

    id: str
    vector: list[float]
    payload: dict[str, Any]
    sparse: SparseVector | None = None


def points_for(
    records: Sequence[VectorRecord],
    dimensions: int,
    generation: str,
    *,
    document_id: str | None = None,
    metadata_filter: Mapping[str, FilterValue | None] | None = None,
    seen: set[tuple[str, int]] | None = None,
    stable_ids: bool = False,
) -> list[PointWrite]:
    """The points of `records` written by `generation`, or ValueError naming the first bad record.

    Point ids derive from the generation and sort by its time, or with `stable_ids` from each
    chunk's metadata, so writing the same records again replaces them (see `layout.py`).

    The records are checked first by `arguments.check_records` (vector, document, scope, and
    no (document, chunk_index) already in `seen`, which collects them across one write).
    """
    check_records(
        records, dimensions, document_id=document_id, metadata_filter=metadata_filter, seen=seen
    )
    points = []
    for record in records:
        metadata = chunk_metadata(record)
        index = record.chunk.chunk_index
        points.append(
            PointWrite(
                point_id(record.document_id, metadata_version(metadata), index)
                if stable_ids
                else generation_point_id(record.document_id, generation, index),
                record.vector,
                payload(record, generation, metadata),
            )
        )
    return points


def term_counts(encoder: Bm25Encoder, records: Sequence[VectorRecord]) -> list[TermCounts | None]:
    """The BM25 term counts of each text chunk of `records` (None for other chunks)."""
    return [
        encoder.count(record.chunk.content.text)
        if isinstance(record.chunk.content, TextBlock)
        else None
        for record in records
    ]


def with_sparse(
    points: list[PointWrite], counts: Sequence[TermCounts | None], average: float
) -> list[PointWrite]:
    """`points` with the BM25 vector of each one whose chunk has counted terms, and that
    chunk's term length in its payload."""
    return [
        dataclasses.replace(
            point,
            payload={**point.payload, TERM_LENGTH: terms.length},
            sparse=Bm25Encoder.document(terms, average),
        )
        if terms is not None and terms.length
        else point
        for point, terms in zip(points, counts, strict=True)
    ]
