"""How QdrantStore judges its hits: a hybrid search's candidates from both sides with their
evidence, the query terms' IDF within the scope, and how a hit of one ranked list is judged."""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from archivist.embedding.relevance import RelevanceCurves
from archivist.rag.document import Chunk
from archivist.rag.store.core.bm25 import SparseVector
from archivist.rag.store.core.distance import higher_is_better
from archivist.rag.store.core.engine import CollectionShape
from archivist.rag.store.core.layout import DOCUMENT_ID, chunk_from
from archivist.rag.store.core.ranking import (
    Judged,
    cosine,
    judge,
    lexical,
    lexical_evidence,
    query_weights,
    rank,
)
from archivist.rag.store.qdrant.backend import (
    SPARSE_VECTOR,
    QdrantBackend,
    ScoredPoint,
    SearchRequest,
)
from archivist.rag.store.qdrant.filter import HasId, Where


async def hybrid_hits(
    backend: QdrantBackend,
    collection: str,
    params: CollectionShape,
    where: Where,
    dense: list[float],
    sparse: SparseVector,
    query_idf: dict[int, float],
    limit: int,
    depth: int,
    curves: RelevanceCurves,
) -> list[Judged[ScoredPoint]]:
    """The best `limit` of a hybrid search's candidates (each side's best `depth`), ranked
    by relevance, with their payloads.

    The dense side ranks by the int8 copies alone (where the collection is quantized):
    rescoring it would read twice `depth` originals from every segment. Each candidate's
    similarity is then the engine's dense score asked for by id, from its original vector
    (computed here from the stored vector for a distance other than Cosine). Its lexical
    evidence comes from the BM25 vector stored with it. Stored vectors are read by id once
    both sides answered; payloads are read for the hits kept only."""
    by_cosine = params.distance == "Cosine"
    nearest, matching = await backend.search_batch(
        collection,
        [
            SearchRequest(depth, where, dense=dense, payload=False, rescore=False),
            SearchRequest(depth, where, sparse=sparse, payload=False),
        ],
    )
    candidates = list(dict.fromkeys(hit.id for hit in (*matching, *nearest)))
    if not candidates:
        return []
    stored = await backend.stored_vectors(
        collection, candidates, (SPARSE_VECTOR,) if by_cosine else ("", SPARSE_VECTOR)
    )
    if by_cosine:
        within = where.also(HasId(tuple(candidates)))
        request = SearchRequest(len(candidates), within, dense=dense, payload=False)
        similarity = {hit.id: hit.score for hit in await backend.search(collection, request)}
    else:
        norm = math.hypot(*dense)
        similarity = {
            point_id: cosine(dense, hit.vector, norm)
            for point_id, hit in stored.items()
            if hit.vector is not None
        }
    judged = []
    for point_id, hit in stored.items():  # a candidate deleted meanwhile is left out
        cosine_similarity = similarity.get(point_id)
        match, held = lexical_evidence(query_idf, hit.weights) if hit.weights else (None, None)
        judged.append(judge(hit, cosine_similarity or 0.0, cosine_similarity, match, held, curves))
    kept = rank(judged, tie_break)[:limit]
    payloads = await backend.retrieve(collection, [hit.item.id for hit in kept])
    return [
        dataclasses.replace(hit, item=dataclasses.replace(hit.item, payload=payloads[hit.item.id]))
        for hit in kept
        if hit.item.id in payloads  # deleted meanwhile
    ]


@dataclass(frozen=True)
class QueryTerms:
    """A query's BM25 side as a search weighs it: each term's weight in the lexical evidence
    (`ranking.query_weights`), and the vector to send the engine, whose IDF modifier then
    turns each term's value into exactly that weight (so the engine's BM25 score of a hit is
    the score the evidence is computed from)."""

    weights: dict[int, float]
    sparse: SparseVector


async def term_weights(
    backend: QdrantBackend, collection: str, scope: Where, sparse: SparseVector
) -> QueryTerms:
    """The weight of each term of the query: its document frequency over the collection
    (read back from the engine's IDF, the one its BM25 ranking uses) for the terms some
    chunk in `scope` holds, none for the rest. Presence is looked up within the scope only,
    so nothing of another tenant shows."""
    terms = sorted(set(sparse.indices))
    # Two independent reads (a server answers both at once): the terms' IDF within the scope,
    # and the collection's chunk count they are read back against.
    engine_idf, stats = await asyncio.gather(
        backend.term_idf(collection, scope, terms), backend.bm25_stats(collection)
    )
    chunks = stats.chunks
    held = {term: held_by(idf, chunks) for term, idf in engine_idf.items()}
    weights = query_weights(held, terms, chunks)
    sent = sorted(engine_idf)
    return QueryTerms(weights, SparseVector(sent, [weights[t] / engine_idf[t] for t in sent]))


def held_by(idf: float, chunks: int) -> int:
    """How many of `chunks` chunks hold a term of BM25 IDF `idf` (at least one)."""
    return max(1, round((max(chunks, 1) + 1.0) / math.exp(idf) - 0.5))


def judge_for(
    params: CollectionShape,
    dense: list[float] | None,
    sparse: SparseVector | None,
    query_idf: dict[int, float],
    curves: RelevanceCurves,
) -> Callable[[ScoredPoint], Judged[ScoredPoint]]:
    """How a hit of one ranked list is judged (see `archivist.rag.store.core.ranking`): a dense hit
    by its similarity (the engine's score; none for distances other than Cosine), a BM25 hit
    by its score's share of the best possible, a pick of maximal marginal relevance over
    both sides by its similarity and its lexical evidence, computed from the vectors stored
    with it (lexical evidence only if it has BM25 terms)."""
    query_norm = math.hypot(*dense) if dense is not None else 0.0
    cosine_scores = params.distance == "Cosine"

    def judged(hit: ScoredPoint) -> Judged[ScoredPoint]:
        if dense is None or sparse is None:
            if sparse is not None:
                return judge(hit, hit.score, lexical=lexical(query_idf, hit.score), curves=curves)
            score = higher_is_better(params.distance, hit.score)
            return judge(hit, score, similarity=hit.score if cosine_scores else None, curves=curves)
        similarity = None if hit.vector is None else cosine(dense, hit.vector, query_norm)
        match, held = lexical_evidence(query_idf, hit.weights) if hit.weights else (None, None)
        return judge(hit, similarity or 0.0, similarity, match, held, curves)

    return judged


def tie_break(point: ScoredPoint) -> tuple[str]:
    """The order of hits judged alike: by point id, which every store gives a chunk alike."""
    return (point.id,)


def document_of(point: ScoredPoint) -> str:
    """The document a hit belongs to."""
    return str(point.payload[DOCUMENT_ID])


def chunk_of(point: ScoredPoint) -> Chunk:
    """The chunk a hit's payload holds."""
    return chunk_from(point.payload)
