"""What QdrantStore needs from a Qdrant engine: the primitive operations both backends provide."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from archivist.rag.store.core.bm25 import Bm25Stats, SparseVector
from archivist.rag.store.core.datatype import VectorDatatype
from archivist.rag.store.core.engine import CollectionShape
from archivist.rag.store.core.layout import CHUNK_INDEX, DOCUMENT_ID, GENERATION
from archivist.rag.store.core.points import PointWrite
from archivist.rag.store.qdrant.filter import IndexKind, Where

SPARSE_VECTOR = "bm25"
"""Name of the BM25 sparse vector beside the dense one (unnamed) in hybrid collections."""

INTERNAL_INDEXES: Mapping[str, IndexKind] = {
    DOCUMENT_ID: "keyword",
    GENERATION: "keyword",
    CHUNK_INDEX: "integer",
}
"""Payload indexes every collection gets when it is created (or first used, if made elsewhere)."""


RESCORE_OVERSAMPLING = 2.0
"""A dense search of a quantized collection ranks this many times the points asked for by
their int8 copies, then rescores them with the original vectors: int8 alone confuses near
neighbours, and its scores carry the quantization error."""

Quantization = Literal["int8"]


@dataclass(frozen=True)
class StoreLayout:
    """How collections a store creates lay out their data.

    `quantization` "int8": dense vectors quantized to int8 in RAM, the originals on disk for
    rescoring (None: the originals in RAM). `vector_datatype`: how the originals are stored;
    "float16" halves their memory and keeps cosine similarities to about 1e-3. `tenant_key`:
    the payload path tenants are told apart by; a server indexes it as Qdrant's tenant index.
    `tenants_only`: every search names a tenant, so a server builds HNSW graphs per tenant
    only (global `m=0`).
    """

    quantization: Quantization | None = None
    vector_datatype: VectorDatatype = "float32"
    tenant_key: str | None = None
    tenants_only: bool = False


@dataclass(frozen=True)
class SearchRequest:
    """One ranked list within `where`: the nearest `limit` points to `dense`, or the best
    `limit` by BM25 for `sparse`. With a `diversity` (0..1, needs `dense`), the engine picks
    the `limit` points instead by maximal marginal relevance on the dense vectors from the
    best `depth` candidates of each side given, trading relevance for dissimilarity to what
    was already picked, in the order picked. Each hit comes with the stored vectors named in
    `vectors` ("" the dense one, `SPARSE_VECTOR` the BM25 one) and, if `payload`, its payload.
    A dense list of a quantized collection is rescored with the original vectors unless
    `rescore` is False: then it is ranked and scored by the int8 copies alone.
    """

    limit: int
    where: Where
    dense: list[float] | None = None
    sparse: SparseVector | None = None
    depth: int = 0
    diversity: float | None = None
    vectors: tuple[str, ...] = ()
    payload: bool = True
    rescore: bool = True


@dataclass(frozen=True)
class ScoredPoint:
    """One search result as the engine scores it; `vector` (the stored dense vector) and
    `weights` (the BM25 vector it was indexed with, term ids in ascending order as written)
    only when the request asked for them."""

    id: str
    score: float
    payload: dict[str, Any]
    vector: list[float] | None = None
    weights: SparseVector | None = None

    @classmethod
    def of(
        cls, point_id: object, score: float, payload: dict[str, Any] | None, vectors: object
    ) -> ScoredPoint:
        """A hit from an engine's point, whichever client returned it: `vectors` is its named
        vectors (the dense one under "" and the BM25 one), the dense vector alone, or None
        when they were not asked for."""
        if isinstance(vectors, dict):
            dense = vectors.get("")
            stored = vectors.get(SPARSE_VECTOR)
            indices, values = getattr(stored, "indices", None), getattr(stored, "values", None)
            return cls(
                str(point_id),
                score,
                payload or {},
                dense if isinstance(dense, list) else None,
                SparseVector(_listed(indices), _listed(values))
                if indices is not None and values is not None
                else None,
            )
        if isinstance(vectors, list) and vectors and isinstance(vectors[0], float):
            return cls(str(point_id), score, payload or {}, vectors)
        return cls(str(point_id), score, payload or {})


def scored_points(points: Sequence[Any]) -> list[ScoredPoint]:
    """The hits of an engine's answer (points with `id`, `score`, `payload`, `vector`)."""
    return [ScoredPoint.of(p.id, p.score, p.payload, p.vector) for p in points]


def _listed(values: Any) -> list[Any]:
    """`values` as a list, copied only if the client gave another sequence."""
    return values if isinstance(values, list) else list(values)


def idf_from_hit(term: int, score: float, vectors: object) -> float:
    """The engine's IDF of `term`, from the best hit of a query for `term` alone (weight 1):
    its score is the IDF times the term's stored weight in that hit's BM25 vector, which
    came back with it (`vectors`, the point's named vectors)."""
    stored = vectors.get(SPARSE_VECTOR) if isinstance(vectors, dict) else None
    indices, values = getattr(stored, "indices", None), getattr(stored, "values", None)
    if indices is None or values is None:
        raise ValueError(f"the hit for BM25 term {term} came back without its BM25 vector")
    weight = dict(zip(indices, values, strict=True)).get(term)
    if not weight:
        raise ValueError(f"the hit for BM25 term {term} does not hold it")
    return score / float(weight)


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
    async def collection_params(self, name: str) -> CollectionShape | None:
        """The shape of collection `name`, or None if it does not exist."""

    @abstractmethod
    async def create_collection(self, name: str, params: CollectionShape) -> None:
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
    async def search(self, name: str, request: SearchRequest) -> list[ScoredPoint]:
        """The points `request` asks for, best first."""

    @abstractmethod
    async def search_batch(
        self, name: str, requests: Sequence[SearchRequest]
    ) -> list[list[ScoredPoint]]:
        """Each request's points, best first, from one engine call."""

    @abstractmethod
    async def retrieve(self, name: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The payload of each point of `ids` that exists, by id."""

    @abstractmethod
    async def stored_vectors(
        self, name: str, ids: Sequence[str], vectors: tuple[str, ...]
    ) -> dict[str, ScoredPoint]:
        """The stored vectors named in `vectors` ("" the dense one, `SPARSE_VECTOR` the BM25
        one) of each point of `ids` that exists, by id (score 0, no payload)."""

    @abstractmethod
    async def term_idf(self, name: str, where: Where, terms: Sequence[int]) -> dict[int, float]:
        """The engine's IDF of each of the BM25 `terms` that at least one point matching
        `where` holds (one batched query; see `idf_from_hit`)."""

    @abstractmethod
    async def bm25_stats(self, name: str) -> Bm25Stats:
        """The chunk-length totals recorded for collection `name`'s BM25 vectors."""

    @abstractmethod
    async def save_bm25_stats(self, name: str, stats: Bm25Stats) -> None:
        """Record `stats` as collection `name`'s BM25 totals."""

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
