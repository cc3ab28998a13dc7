"""One search as every store runs it: the query checked and encoded for the mode, the best
hits found (grouped per document when asked), and the results built from them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from archivist.errors import InvalidArgumentError
from archivist.rag.document import Chunk
from archivist.rag.record import VectorSearchResult
from archivist.rag.store.core.arguments import SearchMode
from archivist.rag.store.core.bm25 import Bm25Encoder, SparseVector
from archivist.rag.store.core.ranking import Judged, grouped, shown_score
from archivist.validation import check_query_vector

T = TypeVar("T")


@dataclass(frozen=True)
class Query:
    """A search's query for the engine: the dense vector and the BM25 terms (each weighted
    1); a side the mode leaves out is None."""

    dense: list[float] | None
    sparse: SparseVector | None

    @property
    def hybrid(self) -> bool:
        return self.dense is not None and self.sparse is not None


def plan_query(
    collection: str,
    query_vector: list[float] | None,
    query_text: str | None,
    mode: SearchMode,
    *,
    dimensions: int,
    encoder: Bm25Encoder | None,
) -> Query | None:
    """The query of a search by `mode` in a collection of `dimensions`-d vectors with BM25
    terms by `encoder` (None: the collection has none, so only "dense" runs); None when
    nothing can match (a text query without one searchable term, and no vector)."""
    dense = None
    if mode != "sparse" and query_vector is not None:
        dense = check_query_vector(query_vector, dimensions)
    if mode == "dense" or query_text is None:
        return Query(dense, None)
    if encoder is None:
        raise InvalidArgumentError(
            f"collection {collection!r} has no BM25 terms, so mode={mode!r} cannot run; "
            "search it with mode='dense', or rebuild it to get hybrid search",
            argument="mode",
        )
    sparse = encoder.query(query_text)
    if not sparse.indices:
        return None if dense is None else Query(dense, None)
    return Query(dense, sparse)


Ranked = Callable[[tuple[str, ...], int], Awaitable[list[Judged[T]]]]
"""The best `limit` hits outside the documents excluded, ranked by relevance."""


async def best_hits(
    ranked: Ranked[T],
    document_of: Callable[[T], str],
    tie_break: Callable[[T], tuple[Any, ...]],
    top_k: int,
    max_per_document: int | None,
) -> list[Judged[T]]:
    """The `top_k` best hits, at most `max_per_document` of one document when given."""
    if max_per_document is None:
        return await ranked((), top_k)
    return await grouped(ranked, document_of, tie_break, top_k, max_per_document)


def search_results(
    hits: Sequence[Judged[T]],
    query: Query,
    document_of: Callable[[T], str],
    chunk_of: Callable[[T], Chunk],
) -> list[VectorSearchResult]:
    """The results of `hits`, in their order: the score a user sees, and the relevance."""
    return [
        VectorSearchResult(
            score=shown_score(hit, query.hybrid),
            document_id=document_of(hit.item),
            chunk=chunk_of(hit.item),
            relevance=hit.relevance,
        )
        for hit in hits
    ]
