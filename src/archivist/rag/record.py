"""Records that cross the vector-store boundary."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from archivist.rag.document import Chunk


class VectorRecord(BaseModel):
    """A chunk with its embedding, written under a document id."""

    model_config = ConfigDict(extra="forbid")

    vector: list[float]
    document_id: str = Field(min_length=1)
    chunk: Chunk


class DuplicateSource(BaseModel):
    """Another place holding the very text of a hit (see `VectorSearchResult.also_in`)."""

    model_config = ConfigDict(extra="forbid")

    document_id: str
    source: str
    chunk_index: int
    score: float
    metadata: dict[str, Any] = Field(default_factory=dict)


class VectorSearchResult(BaseModel):
    """A stored chunk found by a search; higher `score` is always better."""

    model_config = ConfigDict(extra="forbid")

    score: float
    document_id: str
    chunk: Chunk
    relevance: float | None = None
    """Estimated probability (0..1) that the chunk is relevant to the query, comparable across
    queries, modes and languages (see `archivist.rag.store.core.relevance`); None if the store
    cannot tell. `score` only orders the hits of one search."""
    context: list[Chunk] | None = None
    """With `KnowledgeBase.search(..., context=N)`: the chunks from N before to N after the
    hit's, in order, the hit's included (hits of one document whose windows overlap or touch
    are merged into the better one's)."""
    also_in: list[DuplicateSource] = Field(default_factory=list)
    """With `KnowledgeBase.search(..., collapse_duplicates=True)` (the default): the other
    documents or chunks whose text is this hit's (ignoring white space), found by the same
    search, best first; the hit itself is the best-scored copy."""


class DocumentSummary(BaseModel):
    """One document in a collection; `source` and `metadata` come from its chunk 0."""

    model_config = ConfigDict(extra="forbid")

    document_id: str
    source: str
    chunk_count: int
    metadata: dict[str, Any] = Field(default_factory=dict)
