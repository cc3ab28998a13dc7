"""What QdrantStore needs from a Qdrant engine: the primitive operations both backends provide."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from archivist.rag.store._qdrant_filter import IndexKind, Where
from archivist.rag.store._qdrant_layout import CHUNK_INDEX, DOCUMENT_ID, GENERATION

DISTANCES = ("Cosine", "Dot", "Euclid", "Manhattan")

INTERNAL_INDEXES: Mapping[str, IndexKind] = {
    DOCUMENT_ID: "keyword",
    GENERATION: "keyword",
    CHUNK_INDEX: "integer",
}
"""Payload indexes every collection gets when it is created (or first used, if made elsewhere)."""


def check_distance(distance: object) -> str:
    """The canonical name of `distance` (case-insensitive); ValueError naming it otherwise."""
    if isinstance(distance, str):
        for name in DISTANCES:
            if name.lower() == distance.lower():
                return name
    raise ValueError(f"distance must be one of {', '.join(DISTANCES)}; got {distance!r}")


def higher_is_better(distance: str, raw_score: float) -> float:
    """Qdrant's score turned so that higher is better: Euclid and Manhattan distances negated."""
    return -raw_score if distance in {"Euclid", "Manhattan"} else raw_score


@dataclass(frozen=True)
class CollectionParams:
    """The fixed shape of a collection."""

    dimensions: int
    distance: str


@dataclass(frozen=True)
class PointWrite:
    """One point to upsert."""

    id: str
    vector: list[float]
    payload: dict[str, Any]


@dataclass(frozen=True)
class Hit:
    """One search result as the engine scores it."""

    score: float
    payload: dict[str, Any]


class QdrantBackend(ABC):
    """A Qdrant engine (Edge in-process, or a server through qdrant-client).

    Methods take validated arguments; collection existence is checked by the caller.
    """

    @abstractmethod
    async def open(self) -> None:
        """Acquire the engine or connection."""

    @abstractmethod
    async def close(self) -> None:
        """Release everything `open` acquired."""

    @abstractmethod
    async def collection_params(self, name: str) -> CollectionParams | None:
        """The shape of collection `name`, or None if it does not exist."""

    @abstractmethod
    async def create_collection(self, name: str, params: CollectionParams) -> None:
        """Create collection `name` (absent) with the internal payload indexes."""

    @abstractmethod
    async def delete_collection(self, name: str) -> None:
        """Drop collection `name` (present)."""

    @abstractmethod
    async def ensure_indexes(self, name: str, indexes: Mapping[str, IndexKind]) -> None:
        """Create the payload indexes of `indexes` that do not exist yet (each at most once)."""

    @abstractmethod
    async def upsert(self, name: str, points: Sequence[PointWrite]) -> None:
        """Write `points`."""

    @abstractmethod
    async def delete(self, name: str, where: Where) -> None:
        """Delete every point matching `where`."""

    @abstractmethod
    async def search(self, name: str, vector: list[float], limit: int, where: Where) -> list[Hit]:
        """The `limit` points nearest to `vector` among those matching `where`, best first."""

    @abstractmethod
    async def count(self, name: str, where: Where) -> int:
        """Exact number of points matching `where`."""

    @abstractmethod
    async def facet(self, name: str, key: str, where: Where, limit: int) -> dict[str, int]:
        """Exact point count per value of keyword field `key` among points matching `where`."""

    @abstractmethod
    def scroll(
        self, name: str, where: Where, fields: Sequence[str], page_size: int
    ) -> AsyncIterator[list[dict[str, Any]]]:
        """Payloads (only `fields`) of every point matching `where`, a page at a time."""

    @abstractmethod
    async def scroll_ordered(
        self, name: str, where: Where, order_key: str, limit: int
    ) -> list[dict[str, Any]]:
        """Whole payloads of the first `limit` points matching `where`, by integer `order_key`."""

    @abstractmethod
    async def optimize(self, name: str) -> None:
        """Build the vector index of whatever was written unindexed."""
