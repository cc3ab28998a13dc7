"""What every engine's store knows of a collection, and the methods that need nothing more:
whether it exists, its dimensions, the search modes and term layout it offers, and the BM25
encoder of its term layout."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Generic, TypeVar

from archivist.errors import InvalidArgumentError
from archivist.rag.store.base import VectorStoreBase
from archivist.rag.store.core.arguments import SEARCH_MODES, SearchMode
from archivist.rag.store.core.bm25 import Bm25Encoder
from archivist.rag.store.core.terms import TERM_LAYOUT
from archivist.validation import check_collection_name, check_positive_int


@dataclass(frozen=True)
class CollectionShape:
    """The fixed shape of a collection: its dense vector, whether it has BM25 terms, and the
    term layout they were written with (`archivist.rag.store.core.terms`)."""

    dimensions: int
    distance: str
    sparse: bool = False
    term_layout: int = TERM_LAYOUT


S = TypeVar("S", bound=CollectionShape)


class ShapedStore(VectorStoreBase, Generic[S]):
    """A store that can tell a collection's shape (`_shape`); engines subclass it."""

    def __init__(self) -> None:
        self._encoders: dict[int, Bm25Encoder] = {}

    @abstractmethod
    async def _shape(self, name: str, *, fresh: bool = False) -> S | None:
        """The shape of collection `name`, or None if there is none; `fresh` reads it again
        rather than from what this store remembers."""

    async def _require(self, name: str) -> S:
        """The shape of collection `name`; an error naming it if there is none."""
        shape = await self._shape(name)
        if shape is None:
            raise InvalidArgumentError(
                f"collection {name!r} does not exist; create it with create_collection",
                argument="collection",
            )
        return shape

    @staticmethod
    def _check_new_collection(name: str, dimensions: int, sparse: bool) -> None:
        """The arguments of `create_collection`, checked alike in every engine."""
        check_collection_name(name)
        check_positive_int(dimensions, "dimensions")
        if not isinstance(sparse, bool):
            raise InvalidArgumentError(f"sparse must be a bool, got {sparse!r}", argument="sparse")

    @staticmethod
    def _check_same_dimensions(name: str, existing: CollectionShape, dimensions: int) -> None:
        """An error naming both sizes when collection `name` exists for other dimensions."""
        if existing.dimensions != dimensions:
            raise InvalidArgumentError(
                f"collection {name!r} exists with {existing.dimensions} dimensions, "
                f"not dimensions={dimensions}",
                argument="dimensions",
            )

    def _encoder(self, shape: CollectionShape) -> Bm25Encoder:
        """The BM25 encoder of the term layout `shape`'s collection was indexed with."""
        encoder = self._encoders.get(shape.term_layout)
        if encoder is None:
            encoder = self._encoders[shape.term_layout] = Bm25Encoder(shape.term_layout)
        return encoder

    async def has_collection(self, name: str) -> bool:
        check_collection_name(name)
        return await self._shape(name, fresh=True) is not None

    async def collection_dimensions(self, name: str) -> int | None:
        check_collection_name(name)
        shape = await self._shape(name, fresh=True)
        return None if shape is None else shape.dimensions

    async def search_modes(self, collection: str) -> tuple[SearchMode, ...]:
        """All three modes for a collection with BM25 terms; only "dense" otherwise."""
        check_collection_name(collection)
        shape = await self._shape(collection)
        return SEARCH_MODES if shape is not None and shape.sparse else ("dense",)

    async def term_layout(self, collection: str) -> int | None:
        check_collection_name(collection)
        shape = await self._shape(collection)
        return shape.term_layout if shape is not None and shape.sparse else None
