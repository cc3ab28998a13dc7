"""QdrantBackend on qdrant-client's AsyncQdrantClient: a Qdrant server, cluster or local mode."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from qdrant_client import AsyncQdrantClient, models

from archivist.errors import InvalidArgumentError
from archivist.rag.store.core.bm25 import Bm25Stats, SparseVector
from archivist.rag.store.core.engine import CollectionShape
from archivist.rag.store.core.points import PointWrite
from archivist.rag.store.qdrant.backend import (
    INTERNAL_INDEXES,
    RESCORE_OVERSAMPLING,
    SPARSE_VECTOR,
    QdrantBackend,
    ScoredPoint,
    SearchRequest,
    StoreLayout,
    idf_from_hit,
    scored_points,
)
from archivist.rag.store.qdrant.filter import (
    Absent,
    AnyOf,
    Between,
    Condition,
    Either,
    HasId,
    IndexKind,
    Where,
)

_STATS_KEY = "archivist_bm25"
"""Collection metadata key holding the BM25 chunk-length totals."""
_TERMS_KEY = "archivist_terms"
"""Collection metadata key holding the term layout of its BM25 vectors (absent: layout 1)."""

_SCHEMAS: dict[IndexKind, models.PayloadSchemaType] = {
    "keyword": models.PayloadSchemaType.KEYWORD,
    "integer": models.PayloadSchemaType.INTEGER,
    "bool": models.PayloadSchemaType.BOOL,
    "float": models.PayloadSchemaType.FLOAT,
    "datetime": models.PayloadSchemaType.DATETIME,
}


def _condition(
    match: Condition,
) -> models.FieldCondition | models.IsEmptyCondition | models.HasIdCondition | models.Filter:
    if isinstance(match, HasId):
        return models.HasIdCondition(has_id=list(match.ids))
    if isinstance(match, Either):
        return models.Filter(
            should=[_filter(option) or models.Filter() for option in match.options]
        )
    if isinstance(match, Between):
        bounds = {"gte": match.gte, "gt": match.gt, "lte": match.lte, "lt": match.lt}
        condition_range: models.Range | models.DatetimeRange = (
            models.DatetimeRange(**bounds) if match.dates else models.Range(**bounds)
        )
        return models.FieldCondition(key=match.key, range=condition_range)
    if isinstance(match, Absent):
        return models.IsEmptyCondition(is_empty=models.PayloadField(key=match.key))
    if isinstance(match, AnyOf):
        return models.FieldCondition(key=match.key, match=models.MatchAny(any=list(match.values)))
    return models.FieldCondition(key=match.key, match=models.MatchValue(value=match.value))


def _filter(where: Where) -> models.Filter | None:
    if not where.must and not where.must_not:
        return None
    return models.Filter(
        must=[_condition(match) for match in where.must] or None,
        must_not=[_condition(match) for match in where.must_not] or None,
    )


def _sparse(vector: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=vector.indices, values=vector.values)


def _vectors(point: PointWrite) -> models.VectorStruct:
    """The point's dense vector, with its BM25 vector beside it when it has one."""
    if point.sparse is None:
        return point.vector
    return {"": point.vector, SPARSE_VECTOR: _sparse(point.sparse)}


_RESCORED = models.SearchParams(
    quantization=models.QuantizationSearchParams(rescore=True, oversampling=RESCORE_OVERSAMPLING)
)
"""Dense search parameters: see `RESCORE_OVERSAMPLING` (ignored where nothing is quantized)."""
_INT8_ONLY = models.SearchParams(quantization=models.QuantizationSearchParams(rescore=False))
"""Dense search parameters of a list ranked by the int8 copies alone (`SearchRequest.rescore`)."""


def _query(request: SearchRequest) -> dict[str, Any]:
    """The fields of one list's `QueryRequest` (see `SearchRequest`)."""
    condition = _filter(request.where)
    sides: list[tuple[list[float] | models.SparseVector, str | None]] = []
    if request.dense is not None:
        sides.append((request.dense, None))
    if request.sparse is not None:
        sides.append((_sparse(request.sparse), SPARSE_VECTOR))
    query: models.Query | list[float] | models.SparseVector
    query, using = sides[0]
    prefetch = None
    if request.diversity is not None and request.dense is not None:
        mmr = models.Mmr(diversity=request.diversity, candidates_limit=request.depth)
        query, using = models.NearestQuery(nearest=request.dense, mmr=mmr), None
        if len(sides) > 1:
            prefetch = [
                models.Prefetch(
                    query=side,
                    using=side_using,
                    limit=request.depth,
                    filter=condition,
                    params=_RESCORED if side_using is None else None,
                )
                for side, side_using in sides
            ]
    elif len(sides) > 1:
        raise ValueError("a search request ranks by one side, or picks from both by MMR")
    return {
        "query": query,
        "using": using,
        "prefetch": prefetch,
        "limit": request.limit,
        "filter": condition,
        "with_payload": request.payload,
        "with_vector": list(request.vectors) or False,
        "params": None if request.dense is None else _RESCORED if request.rescore else _INT8_ONLY,
    }


class ClientBackend(QdrantBackend):
    """Talks to Qdrant through a client that `connect` makes on open.

    `owns_client` says whether close() closes it (not for a client the caller brought).
    Payload indexes created or found are remembered, so each is requested at most once.
    Collections it creates follow Qdrant's multitenancy advice (see `create_collection`).
    """

    def __init__(
        self, connect: Callable[[], AsyncQdrantClient], owns_client: bool, layout: StoreLayout
    ) -> None:
        self._connect = connect
        self._owns_client = owns_client
        self._layout = layout
        self._client: AsyncQdrantClient | None = None
        self._indexes: dict[str, set[str]] = {}

    @property
    def client(self) -> AsyncQdrantClient:
        """The open client."""
        assert self._client is not None
        return self._client

    async def open(self) -> None:
        self._client = self._connect()

    async def close(self) -> None:
        client, self._client = self._client, None
        self._indexes.clear()
        if client is not None and self._owns_client:
            await client.close()

    async def collection_params(self, name: str) -> CollectionShape | None:
        if not await self.client.collection_exists(name):
            return None
        info = await self.client.get_collection(name)
        vectors = info.config.params.vectors
        if not isinstance(vectors, models.VectorParams):
            raise InvalidArgumentError(
                f"collection {name!r} uses named vectors; "
                "QdrantStore needs a single unnamed vector",
                argument="collection",
            )
        self._indexes.setdefault(name, set()).update(info.payload_schema)
        sparse = SPARSE_VECTOR in (info.config.params.sparse_vectors or {})
        layout = int((info.config.metadata or {}).get(_TERMS_KEY, 1))
        return CollectionShape(vectors.size, vectors.distance.value, sparse, layout)

    async def create_collection(self, name: str, params: CollectionShape) -> None:
        """Create `name` laid out for many tenants: the tenant key gets a keyword index marked
        `is_tenant` (the server keeps each tenant's points together) and HNSW links per tenant
        (`payload_m`), the global graph only when searches may span tenants; with int8
        quantization the originals go on disk and are read back to rescore."""
        layout = self._layout
        quantized = layout.quantization == "int8"
        tenants = layout.tenant_key is not None
        await self.client.create_collection(
            name,
            vectors_config=models.VectorParams(
                size=params.dimensions,
                distance=models.Distance(params.distance),
                on_disk=True if quantized else None,
                datatype=models.Datatype(layout.vector_datatype),
            ),
            sparse_vectors_config=(
                {SPARSE_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)}
                if params.sparse
                else None
            ),
            hnsw_config=(
                models.HnswConfigDiff(payload_m=16, m=0 if layout.tenants_only else None)
                if tenants
                else None
            ),
            quantization_config=(
                models.ScalarQuantization(
                    scalar=models.ScalarQuantizationConfig(
                        type=models.ScalarType.INT8, quantile=0.99, always_ram=True
                    )
                )
                if quantized
                else None
            ),
            metadata={_TERMS_KEY: params.term_layout} if params.sparse else None,
        )
        self._indexes[name] = set()
        if layout.tenant_key is not None:
            await self.client.create_payload_index(
                name,
                layout.tenant_key,
                field_schema=models.KeywordIndexParams(
                    type=models.KeywordIndexType.KEYWORD, is_tenant=True
                ),
                wait=True,
            )
            self._indexes[name].add(layout.tenant_key)
        await self.ensure_indexes(name, INTERNAL_INDEXES)

    async def delete_collection(self, name: str) -> None:
        await self.client.delete_collection(name)
        self._indexes.pop(name, None)

    async def ensure_indexes(self, name: str, indexes: Mapping[str, IndexKind]) -> None:
        known = self._indexes.setdefault(name, set())
        for path, kind in indexes.items():
            if path not in known:
                known.add(path)
                try:
                    await self.client.create_payload_index(
                        name, path, field_schema=_SCHEMAS[kind], wait=True
                    )
                except BaseException:
                    known.discard(path)
                    raise

    async def upsert(self, name: str, points: Sequence[PointWrite]) -> None:
        await self.client.upsert(
            name,
            points=[
                models.PointStruct(id=point.id, vector=_vectors(point), payload=point.payload)
                for point in points
            ],
            wait=True,
        )

    async def delete(self, name: str, where: Where) -> None:
        condition = _filter(where)
        if condition is None:
            raise ValueError("refusing to delete without a condition")
        await self.client.delete(
            name, points_selector=models.FilterSelector(filter=condition), wait=True
        )

    async def search(self, name: str, request: SearchRequest) -> list[ScoredPoint]:
        [points] = await self.search_batch(name, [request])
        return points

    async def search_batch(
        self, name: str, requests: Sequence[SearchRequest]
    ) -> list[list[ScoredPoint]]:
        batch = [models.QueryRequest(**_query(request)) for request in requests]
        responses = await self.client.query_batch_points(name, batch)
        return [scored_points(response.points) for response in responses]

    async def retrieve(self, name: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        records = await self.client.retrieve(name, list(ids), with_payload=True)
        return {str(record.id): record.payload or {} for record in records}

    async def stored_vectors(
        self, name: str, ids: Sequence[str], vectors: tuple[str, ...]
    ) -> dict[str, ScoredPoint]:
        records = await self.client.retrieve(
            name, list(ids), with_payload=False, with_vectors=list(vectors) or False
        )
        return {str(r.id): ScoredPoint.of(r.id, 0.0, None, r.vector) for r in records}

    async def term_idf(self, name: str, where: Where, terms: Sequence[int]) -> dict[int, float]:
        condition = _filter(where)
        requests = [
            models.QueryRequest(
                query=models.SparseVector(indices=[term], values=[1.0]),
                using=SPARSE_VECTOR,
                filter=condition,
                limit=1,
                with_vector=[SPARSE_VECTOR],
            )
            for term in terms
        ]
        responses = await self.client.query_batch_points(name, requests)
        return {
            term: idf_from_hit(term, r.points[0].score, r.points[0].vector)
            for term, r in zip(terms, responses, strict=True)
            if r.points
        }

    async def bm25_stats(self, name: str) -> Bm25Stats:
        info = await self.client.get_collection(name)
        stored = (info.config.metadata or {}).get(_STATS_KEY) or {}
        return Bm25Stats(int(stored.get("tokens", 0)), int(stored.get("chunks", 0)))

    async def save_bm25_stats(self, name: str, stats: Bm25Stats) -> None:
        totals = {"tokens": stats.tokens, "chunks": stats.chunks}
        await self.client.update_collection(name, metadata={_STATS_KEY: totals})

    async def count(self, name: str, where: Where) -> int:
        result = await self.client.count(name, count_filter=_filter(where), exact=True)
        return result.count

    async def facet(self, name: str, key: str, where: Where, limit: int) -> dict[str, int]:
        response = await self.client.facet(
            name, key=key, facet_filter=_filter(where), limit=limit, exact=True
        )
        return {str(hit.value): hit.count for hit in response.hits}

    async def scroll(
        self, name: str, where: Where, fields: Sequence[str], page_size: int
    ) -> AsyncIterator[list[dict[str, Any]]]:
        offset: models.ExtendedPointId | None = None
        while True:
            records, offset = await self.client.scroll(
                name,
                scroll_filter=_filter(where),
                limit=page_size,
                offset=offset,
                with_payload=models.PayloadSelectorInclude(include=list(fields)),
                with_vectors=False,
            )
            yield [record.payload or {} for record in records]
            if offset is None:
                return

    async def scroll_ordered(
        self, name: str, where: Where, order_key: str, limit: int
    ) -> list[dict[str, Any]]:
        records, _ = await self.client.scroll(
            name,
            scroll_filter=_filter(where),
            limit=limit,
            order_by=models.OrderBy(key=order_key, direction=models.Direction.ASC),
            with_payload=True,
            with_vectors=False,
        )
        return [record.payload or {} for record in records]

    async def optimize(self, name: str) -> None:
        """Nothing to do: a Qdrant server builds its indexes in the background on its own."""
