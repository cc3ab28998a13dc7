"""`Engine`: what a database must do for `CoreStore` to be a whole vector store.

An engine keeps collections of a fixed shape, turns a metadata filter into its own scope,
ranks one search's candidates, reads summaries, chunks and generations by document, writes
points with their BM25 terms and removes chunks (keeping the collection's BM25 totals those of
the chunks stored), and locks one document. Everything else (the argument checks, the search
plan, grouping per document, the crash-safe replace, the repair protocol) is the core's.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol, TypeVar

from archivist.errors import InvalidArgumentError
from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary
from archivist.rag.store.core.arguments import SearchArguments
from archivist.rag.store.core.bm25 import TermCounts
from archivist.rag.store.core.generations import GenerationInfo
from archivist.rag.store.core.points import PointWrite
from archivist.rag.store.core.query import Query, Ranked
from archivist.rag.store.core.terms import TERM_LAYOUT
from archivist.validation import MetadataFilter


@dataclass(frozen=True)
class CollectionShape:
    """The fixed shape of a collection: its dense vector, whether it has BM25 terms, and the
    term layout they were written with (`archivist.rag.store.core.terms`)."""

    dimensions: int
    distance: str
    sparse: bool = False
    term_layout: int = TERM_LAYOUT


S = TypeVar("S", bound=CollectionShape)
"""An engine's collection shape."""
W = TypeVar("W")
"""An engine's native scope: a metadata filter as its own condition."""
H = TypeVar("H")
"""An engine's search hit, before it becomes a `VectorSearchResult`."""


def missing_collection(name: str) -> InvalidArgumentError:
    """The error of a write to collection `name`, which does not exist."""
    return InvalidArgumentError(
        f"collection {name!r} does not exist; create it with create_collection",
        argument="collection",
    )


class Engine(Protocol[S, W, H]):
    """A database under `CoreStore`: its arguments arrive checked, its answers leave as is."""

    # Opening and collections

    async def open(self) -> None:
        """Connect or open; RuntimeError if already open."""

    async def close(self) -> None:
        """Close; a no-op when not open."""

    def check_open(self) -> None:
        """RuntimeError outside `async with store:`."""

    async def shape(self, collection: str, *, fresh: bool = False) -> S | None:
        """The shape of `collection`, or None if there is none; `fresh` reads it again rather
        than from what the engine remembers."""

    async def create_collection(self, collection: str, dimensions: int, sparse: bool) -> S:
        """Create `collection` unless it exists (here or, meanwhile, in another process);
        the shape it has either way."""

    async def delete_collection(self, collection: str) -> None:
        """Drop `collection` and what it holds; a no-op if it does not exist."""

    async def optimize(self, collection: str) -> None:
        """Build search indexes after a bulk load (`missing_collection` if there is no
        `collection` to build them in); a no-op for an engine indexing on write."""

    # Searching and reading

    async def scope(self, collection: str, metadata_filter: MetadataFilter | None) -> W:
        """`metadata_filter` (checked) as the engine's condition in `collection`."""

    async def ranker(
        self,
        collection: str,
        shape: S,
        scope: W,
        query: Query,
        search: SearchArguments,
        depth: int,
    ) -> Ranked[H] | None:
        """How the engine ranks `query`'s hits within `scope` (the best `limit` outside the
        documents excluded, judged by `archivist.rag.store.core.ranking`, from at least
        `depth` candidates a side in a hybrid search); None when `search.search_filter`
        leaves nothing to search."""

    def document_of(self, hit: H) -> str:
        """The document `hit` belongs to."""

    def tie_break(self, hit: H) -> tuple[str, ...]:
        """The order of hits judged alike: the chunk's point id, the same in every engine."""

    def chunk_of(self, hit: H) -> Chunk:
        """The chunk `hit` holds."""

    async def summaries(self, collection: str, shape: S, scope: W) -> list[DocumentSummary]:
        """One summary per document within `scope`, by document id."""

    async def summary(
        self, collection: str, shape: S, scope: W, document_id: str
    ) -> DocumentSummary | None:
        """The summary of `document_id` within `scope`, read without the other documents."""

    async def chunk_page(
        self, collection: str, shape: S, scope: W, document_id: str, offset: int, limit: int
    ) -> list[Chunk]:
        """`limit` (>0) chunks of `document_id` from position `offset`, in chunk order."""

    async def chunk_range(
        self, collection: str, shape: S, scope: W, document_id: str, first: int, last: int
    ) -> list[Chunk]:
        """The chunks of `document_id` with `first` <= chunk_index <= `last`, in order."""

    async def generations(
        self, collection: str, shape: S, scope: W, document_id: str | None
    ) -> list[GenerationInfo]:
        """Every (document, generation) within `scope` (of `document_id` only, if given)."""

    # Writing

    async def write(
        self,
        collection: str,
        shape: S,
        points: list[PointWrite],
        counts: Sequence[TermCounts | None],
        *,
        overwrites: bool = True,
    ) -> None:
        """Store `points` with the BM25 terms `counts` (one each; all None in a collection
        without terms), adding those chunks to the collection's BM25 totals (and taking off
        the chunks they overwrite; `overwrites=False` says their ids are new, as a
        replace's are)."""

    async def remove(
        self,
        collection: str,
        shape: S,
        scope: W | None,
        document_id: str | None,
        *,
        generation: str | None = None,
        keep: str | None = None,
    ) -> None:
        """Remove the chunks within `scope` (None: anywhere) of `document_id` (None: of any),
        of `generation` only, or of every generation but `keep`; subtract them from the
        collection's BM25 totals."""

    def document_lock(
        self, collection: str, document_id: str
    ) -> AbstractAsyncContextManager[object]:
        """Held while one document is replaced, deleted or repaired."""
