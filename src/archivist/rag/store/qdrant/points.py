"""Vector records turned into the points of one write, after checking every record first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from archivist.errors import InvalidArgumentError
from archivist.rag.record import VectorRecord
from archivist.rag.store.qdrant.backend import PointWrite
from archivist.rag.store.qdrant.filter import satisfies
from archivist.rag.store.qdrant.layout import (
    chunk_metadata,
    metadata_version,
    payload,
    point_id,
)
from archivist.validation import FilterValue, vector_problem


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

    Point ids derive from the generation, or with `stable_ids` from each chunk's metadata, so
    writing the same records again replaces them (see `layout.py`).

    A record must hold a finite vector of `dimensions`, belong to `document_id` when one is given,
    carry metadata inside `metadata_filter`, and not repeat a (document, chunk_index) already in
    `seen` (which collects them across the batches of one write).
    """
    seen = set() if seen is None else seen
    points = []
    for position, record in enumerate(records):
        if not isinstance(record, VectorRecord):
            raise InvalidArgumentError(
                f"records[{position}] is a {type(record).__name__}, not a VectorRecord",
                argument="records",
            )
        chunk_index = record.chunk.chunk_index
        named = f"records[{position}] (document {record.document_id!r}, chunk {chunk_index})"
        problem = vector_problem(record.vector, dimensions)
        if problem is not None:
            raise InvalidArgumentError(f"{named}: vector {problem}", argument="records")
        if document_id is not None and record.document_id != document_id:
            raise InvalidArgumentError(
                f"{named}: belongs to another document than {document_id!r}", argument="records"
            )
        key = (record.document_id, chunk_index)
        if key in seen:
            raise InvalidArgumentError(
                f"{named}: chunk_index {chunk_index} appears twice in one write", argument="records"
            )
        seen.add(key)
        metadata = chunk_metadata(record)
        if metadata_filter and not satisfies(metadata, metadata_filter):
            raise InvalidArgumentError(
                f"{named}: chunk metadata lies outside metadata_filter", argument="records"
            )
        version = metadata_version(metadata) if stable_ids else generation
        points.append(
            PointWrite(
                point_id(record.document_id, version, chunk_index),
                record.vector,
                payload(record, generation, metadata),
            )
        )
    return points
