"""The argument checks every vector store runs first, public for store authors.

Each `VectorStoreBase` method starts with one of these, so every store rejects the same bad
input with the same message (a ValueError naming the argument; a TypeError for a value of the
wrong kind), and what the knowledge base accepts every store accepts. The rules themselves are
in `archivist.validation`; these group them per store method.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from archivist.embedding.relevance import DEFAULT_CURVES, RelevanceCurves
from archivist.errors import InvalidArgumentError
from archivist.rag.record import VectorRecord
from archivist.rag.store.search_filter import SearchFilter
from archivist.validation import (
    MetadataFilter,
    check_collection_name,
    check_document_id,
    check_limit,
    check_metadata_filter,
    check_non_negative_int,
    check_positive_int,
    vector_problem,
)

SearchMode = Literal["hybrid", "dense", "sparse"]
"""How a search ranks: dense vectors, BM25 sparse vectors, or both together."""
SEARCH_MODES: tuple[SearchMode, ...] = ("hybrid", "dense", "sparse")


def check_search_mode(mode: object) -> SearchMode:
    """`mode` if it is a search mode; ValueError naming the choices otherwise."""
    for name in SEARCH_MODES:
        if mode == name:
            return name
    raise InvalidArgumentError(
        f"mode must be one of {', '.join(SEARCH_MODES)}; got {mode!r}", argument="mode"
    )


def check_diversity(diversity: object) -> float | None:
    """`diversity` if it is None or a number in [0, 1]; ValueError otherwise."""
    if diversity is None:
        return None
    if isinstance(diversity, bool) or not isinstance(diversity, int | float):
        raise InvalidArgumentError(
            f"diversity must be a number from 0 to 1, got {diversity!r}", argument="diversity"
        )
    if not 0.0 <= float(diversity) <= 1.0:
        raise InvalidArgumentError(
            f"diversity must be from 0 to 1, got {diversity!r}", argument="diversity"
        )
    return float(diversity)


@dataclass(frozen=True)
class SearchArguments:
    """The arguments of one `VectorStoreBase.search`, checked (see `check_search`)."""

    collection: str
    top_k: int
    metadata_filter: MetadataFilter | None
    query_text: str | None
    mode: SearchMode
    diversity: float | None
    max_per_document: int | None
    search_filter: SearchFilter | None
    """None when absent or when it lets everything through."""
    relevance_curves: RelevanceCurves = DEFAULT_CURVES
    """How hits are judged (`archivist.embedding.relevance`)."""


def check_search(
    collection: object,
    query_vector: Sequence[float] | None,
    top_k: object,
    metadata_filter: Mapping[str, Any] | None = None,
    *,
    query_text: str | None = None,
    mode: object = "dense",
    diversity: object = None,
    max_per_document: object = None,
    search_filter: object = None,
    relevance_curves: object = None,
) -> SearchArguments:
    """The arguments of a search if they go together; else an error naming the first bad one.

    The query vector's size and values are checked against the collection afterwards, with
    `archivist.validation.check_query_vector`, once its dimensions are known.
    """
    name = check_collection_name(collection)
    count = check_positive_int(top_k, "top_k")
    scope = check_metadata_filter(metadata_filter)
    chosen = check_search_mode(mode)
    checked_diversity = check_diversity(diversity)
    if checked_diversity is not None and chosen == "sparse":
        raise InvalidArgumentError(
            "diversity needs dense vectors: use mode='dense' or 'hybrid'", argument="diversity"
        )
    per_document = None
    if max_per_document is not None:
        per_document = check_positive_int(max_per_document, "max_per_document")
        if checked_diversity is not None:
            raise InvalidArgumentError(
                "max_per_document cannot be combined with diversity", argument="max_per_document"
            )
    if search_filter is not None and not isinstance(search_filter, SearchFilter):
        raise TypeError("search_filter must be a SearchFilter")
    if relevance_curves is not None and not isinstance(relevance_curves, RelevanceCurves):
        raise TypeError("relevance_curves must be RelevanceCurves")
    if chosen != "sparse" and query_vector is None:
        raise InvalidArgumentError(f"mode={chosen!r} needs a query_vector", argument="query_vector")
    if chosen != "dense" and (not isinstance(query_text, str) or not query_text.strip()):
        raise InvalidArgumentError(
            f"mode={chosen!r} needs a non-empty query_text", argument="query_text"
        )
    return SearchArguments(
        collection=name,
        top_k=count,
        metadata_filter=scope,
        query_text=query_text,
        mode=chosen,
        diversity=checked_diversity,
        max_per_document=per_document,
        search_filter=None if search_filter is None or search_filter.is_empty else search_filter,
        relevance_curves=relevance_curves or DEFAULT_CURVES,
    )


def check_document_arguments(
    collection: object, document_id: object, metadata_filter: Mapping[str, Any] | None = None
) -> MetadataFilter | None:
    """The checked `metadata_filter` of a call on one document (delete, replace, summary),
    after checking `collection` and `document_id`."""
    check_collection_name(collection)
    check_document_id(document_id)
    return check_metadata_filter(metadata_filter)


def check_chunk_page(
    collection: object,
    document_id: object,
    offset: object,
    limit: object,
    metadata_filter: Mapping[str, Any] | None = None,
) -> MetadataFilter | None:
    """The checked `metadata_filter` of `list_chunks`, after its other arguments (`limit` 0
    is allowed and reads nothing)."""
    scope = check_document_arguments(collection, document_id, metadata_filter)
    check_non_negative_int(offset, "offset")
    check_limit(limit)
    return scope


def matches_filter(metadata: Mapping[str, Any], metadata_filter: Mapping[str, Any] | None) -> bool:
    """Whether chunk `metadata` lies inside `metadata_filter`, type-strictly (1, True and "1"
    are three values); a None in the filter wants the key absent (or null)."""
    for key, wanted in (metadata_filter or {}).items():
        if wanted is None:
            if metadata.get(key) is not None:
                return False
            continue
        if key not in metadata:
            return False
        value = metadata[key]
        if type(value) is not type(wanted) or value != wanted:
            return False
    return True


def check_records(
    records: Sequence[VectorRecord],
    dimensions: int | None,
    *,
    document_id: str | None = None,
    metadata_filter: Mapping[str, Any] | None = None,
    seen: set[tuple[str, int]] | None = None,
) -> None:
    """Check a write of `records`; ValueError naming the first bad record (`records[i]`).

    Each must be a VectorRecord with a finite vector of `dimensions` (None: the size of the
    first record's), belong to `document_id` when one is given, carry chunk metadata inside
    `metadata_filter`, and not repeat a (document, chunk_index) already in `seen`, which
    collects them across the batches of one write.
    """
    seen = set() if seen is None else seen
    for position, record in enumerate(records):
        if not isinstance(record, VectorRecord):
            raise InvalidArgumentError(
                f"records[{position}] is a {type(record).__name__}, not a VectorRecord",
                argument="records",
            )
        if dimensions is None:
            dimensions = len(record.vector)
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
        if metadata_filter and not matches_filter(stored_metadata(record), metadata_filter):
            raise InvalidArgumentError(
                f"{named}: chunk metadata lies outside metadata_filter", argument="records"
            )


def stored_metadata(record: VectorRecord) -> dict[str, Any]:
    """The record's chunk metadata in the JSON form stores keep and filter it in."""
    dumped: dict[str, Any] = record.chunk.model_dump(mode="json", include={"metadata"})
    return dict(dumped["metadata"])
