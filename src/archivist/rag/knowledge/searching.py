"""Search planning: which mode each query runs in, what the store is asked, and how the hits
of several queries are merged, thresholded, collapsed (copies of one text, then per document)
and given context."""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from archivist.errors import InvalidArgumentError
from archivist.message import DataBlock, TextBlock
from archivist.rag.cjk import mostly_cjk
from archivist.rag.knowledge.context import MAX_CONTEXT, merged_windows
from archivist.rag.knowledge.notices import logger
from archivist.rag.knowledge.vocabulary import unreadable
from archivist.rag.record import DuplicateSource, VectorSearchResult
from archivist.rag.store.base import (
    MetadataFilter,
    SearchMode,
    VectorStoreBase,
    check_diversity,
    check_search_mode,
)
from archivist.rag.store.core.relevance import DEFAULT_MIN_RELEVANCE, check_min_relevance
from archivist.rag.store.core.terms import TERM_LAYOUT, exact_lookup
from archivist.rag.store.search_filter import SearchFilter
from archivist.validation import (
    check_non_negative_int,
    check_optional_positive_int,
    check_positive_int,
)

if TYPE_CHECKING:
    from archivist.embedding import EmbeddingModelBase
    from archivist.embedding.relevance import RelevanceCurves

Query = str | TextBlock | DataBlock

COLLAPSE_FANOUT = 4
"""Candidates fetched per result slot when results are collapsed per document."""
COPIES_FANOUT = 2
"""Candidates fetched per result slot (at least) when copies of one text are collapsed: a
text held twice (two checkouts, a copied folder) still fills `top_k` in one round, and copies,
which score alike and rank side by side, are named in `also_in` even for the last hits."""


class SearchTarget(Protocol):
    """What a search needs of a knowledge base: its name, model, store and scope."""

    name: str
    embedding_model: EmbeddingModelBase
    vector_store: VectorStoreBase
    collection: str
    metadata_filter: MetadataFilter | None

    async def has_collection(self) -> bool: ...


class Searcher:
    """Runs `KnowledgeBase.search` for `target`; remembers what the collection offers."""

    def __init__(self, target: SearchTarget) -> None:
        self._target = target
        self._hinted_dense_only = False
        self._hinted_old_terms = False

    async def search(
        self,
        queries: Sequence[Query] | Query,
        top_k: int,
        score_threshold: float | None,
        *,
        mode: SearchMode | None,
        max_per_document: int | None,
        diversity: float | None,
        search_filter: SearchFilter | Mapping[str, Any] | None,
        context: int,
        min_relevance: float | None,
        collapse_duplicates: bool = True,
    ) -> list[VectorSearchResult]:
        """See `KnowledgeBase.search`."""
        store = self._target.vector_store
        check_positive_int(top_k, "top_k")
        if score_threshold is not None and not math.isfinite(score_threshold):
            raise InvalidArgumentError(
                f"score_threshold must be finite, got {score_threshold!r}",
                argument="score_threshold",
            )
        check_optional_positive_int(max_per_document, "max_per_document")
        check_diversity(diversity)
        if diversity is not None and not store.capabilities.diversity:
            raise InvalidArgumentError(
                f"{type(store).__name__} does not support diversity (MMR) search",
                argument="diversity",
            )
        narrowing = self._check_search_filter(search_filter)
        min_relevance = check_min_relevance(min_relevance)
        check_non_negative_int(context, "context")
        if context > MAX_CONTEXT:
            raise InvalidArgumentError(
                f"context must be at most {MAX_CONTEXT}, got {context}", argument="context"
            )
        if context and not store.capabilities.chunk_listing:
            raise InvalidArgumentError(
                f"{type(store).__name__} cannot list chunks (it does not declare "
                "chunk_listing), so search context is not available",
                argument="context",
            )
        usable = self._usable_queries(queries)
        if not usable or not await self._target.has_collection():
            return []  # a search never creates the collection: a deleted one stays deleted
        chosen = await self._search_mode(mode, score_threshold)
        grouped = max_per_document is not None and diversity is None and store.capabilities.grouping
        # By default one document yields its places to other relevant documents: that needs
        # the hits below the first `top_k` to choose from.
        spread = max_per_document is None and diversity is None and store.capabilities.relevance
        depth = (
            top_k
            if not spread and (max_per_document is None or grouped)
            else top_k * COLLAPSE_FANOUT
        )
        if collapse_duplicates:
            depth = max(depth, top_k * COPIES_FANOUT)
        while True:
            hits_per_query = await self._run_queries(
                usable,
                chosen,
                depth,
                diversity,
                defaulted=mode is None,
                max_per_document=max_per_document if grouped else None,
                search_filter=narrowing,
            )
            ranked = merge(hits_per_query, score_threshold, diversity, min_relevance)
            if collapse_duplicates:
                ranked = collapse_same_text(ranked)
            if max_per_document is not None:
                ranked = collapse(ranked, max_per_document)
            elif spread:
                ranked = spread_documents(ranked, top_k)
            # Fewer than top_k left after collapsing (copies of one text, or a store that
            # cannot group): fetch deeper until full or out of candidates.
            deeper = any(hit.also_in for hit in ranked) or (
                max_per_document is not None and not grouped
            )
            exhausted = all(len(hits) < depth for hits in hits_per_query)
            if not deeper or len(ranked) >= top_k or exhausted:
                break
            depth *= COLLAPSE_FANOUT
        shown = ranked[:top_k]
        if diversity is not None:
            # Maximal marginal relevance chose these hits; they are shown by relevance.
            shown = by_relevance(shown)
        if context:
            return await self._with_context(shown, context)
        return shown

    async def _with_context(
        self, hits: list[VectorSearchResult], context: int
    ) -> list[VectorSearchResult]:
        """`hits` with their windows of neighbouring chunks, overlapping windows merged."""
        target = self._target
        windows = merged_windows(hits, context)
        chunks = await asyncio.gather(
            *(
                target.vector_store.chunk_window(
                    target.collection, hit.document_id, first, last, target.metadata_filter
                )
                for hit, first, last in windows
            )
        )
        return [
            hit.model_copy(update={"context": window or [hit.chunk]})
            for (hit, _, _), window in zip(windows, chunks, strict=True)
        ]

    async def _search_mode(self, mode: SearchMode | None, threshold: float | None) -> SearchMode:
        """The mode to search in: `mode` if the collection supports it, else the default."""
        target = self._target
        store = target.vector_store
        supported = await store.search_modes(target.collection)
        offers_modes = store.capabilities.search_modes != {"dense"}
        layout = await store.term_layout(target.collection)
        if layout is not None and layout < TERM_LAYOUT and not self._hinted_old_terms:
            self._hinted_old_terms = True
            logger.warning(
                "knowledge base %r was indexed before numbers were search terms, so words "
                "match but numbers, versions and dates (port 8731, v2.0.11) do not; rebuild "
                "it (`archivist index PATH --kb %s --rebuild`, or insert into a new "
                "collection) to search them",
                target.name,
                target.name,
            )
        if mode is not None:
            check_search_mode(mode)
            if mode not in supported:
                raise InvalidArgumentError(
                    f"knowledge base {target.name!r} (collection {target.collection!r}) "
                    f"supports only {', '.join(supported)} search; rebuild it (`archivist "
                    f"index PATH --kb {target.name} --rebuild`, or insert into a new "
                    f"collection) to get {mode} search",
                    argument="mode",
                )
            return mode
        if "hybrid" not in supported:
            if offers_modes and not self._hinted_dense_only:
                self._hinted_dense_only = True
                logger.warning(
                    "knowledge base %r has no BM25 vectors, so search is dense-only; rebuild it "
                    "(`archivist index PATH --kb %s --rebuild`, or insert into a new collection) "
                    "for hybrid search",
                    target.name,
                    target.name,
                )
            return "dense"
        return "dense" if threshold is not None else "hybrid"

    async def _run_queries(
        self,
        usable: list[Query],
        mode: SearchMode,
        depth: int,
        diversity: float | None,
        *,
        defaulted: bool = False,
        max_per_document: int | None = None,
        search_filter: SearchFilter | None = None,
    ) -> list[list[VectorSearchResult]]:
        """Each query's hits: text in `mode`, DataBlocks by their dense vector.

        When hybrid is only the default (`defaulted`), a text query the model cannot read, or
        one naming only identifiers and numbers (an exact lookup: "E0499", "8731"), is
        searched by BM25 alone: its dense vector would only add noise to the ranking.
        """
        target = self._target
        model = target.embedding_model
        plan: list[tuple[Query, str | None, SearchMode, RelevanceCurves]] = []
        for query in usable:
            text = (
                None
                if isinstance(query, DataBlock)
                else query
                if isinstance(query, str)
                else query.text
            )
            if text is None:
                if mode != "sparse":
                    plan.append((query, None, "dense", curves_for(model, None, blind=False)))
                continue
            blind = unreadable(model, text)
            curves = curves_for(model, text, blind=blind)
            if (
                defaulted
                and mode == "hybrid"
                and diversity is None
                and (blind or exact_lookup(text))
            ):
                plan.append((query, text, "sparse", curves))
            else:
                plan.append((query, text, mode, curves))
        to_embed = [query for query, _, query_mode, _ in plan if query_mode != "sparse"]
        vectors: list[list[float]] = []
        if to_embed:
            vectors = list((await model(to_embed, input_type="query")).embeddings)
        embedded = iter(vectors)
        store = target.vector_store
        searches = []
        for _, text, query_mode, curves in plan:
            vector = None if query_mode == "sparse" else next(embedded)
            if store.capabilities.search_options:
                judged = {"relevance_curves": curves}
                searches.append(
                    store.search(
                        target.collection,
                        vector,
                        depth,
                        target.metadata_filter,
                        query_text=text,
                        mode=query_mode,
                        diversity=diversity,
                        max_per_document=max_per_document,
                        search_filter=search_filter,
                        **(judged if store.capabilities.relevance else {}),
                    )
                )
            elif target.metadata_filter is None:
                # The minimal store: its search may take only these (AgentScope's skeleton).
                searches.append(store.search(target.collection, vector, depth))
            else:
                searches.append(
                    store.search(
                        target.collection, vector, depth, metadata_filter=target.metadata_filter
                    )
                )
        return list(await asyncio.gather(*searches))

    def _check_search_filter(
        self, search_filter: SearchFilter | Mapping[str, Any] | None
    ) -> SearchFilter | None:
        """`search_filter` as a SearchFilter (None when it lets everything through)."""
        if search_filter is None:
            return None
        if not isinstance(search_filter, SearchFilter):
            if not isinstance(search_filter, Mapping):
                raise TypeError("search_filter must be a SearchFilter or a dict")
            try:
                search_filter = SearchFilter.model_validate(dict(search_filter))
            except ValidationError as error:
                raise InvalidArgumentError(
                    f"search_filter: {_first_error(error)}", argument="search_filter"
                ) from None
        if search_filter.is_empty:
            return None
        store = self._target.vector_store
        if not store.capabilities.search_filter:
            raise InvalidArgumentError(
                f"{type(store).__name__} does not support search filters "
                "(paths, types, since, where)",
                argument="search_filter",
            )
        return search_filter

    def _usable_queries(self, queries: Sequence[Query] | Query) -> list[Query]:
        """The queries worth searching: non-blank text; DataBlocks if the model embeds them."""
        if isinstance(queries, str | TextBlock | DataBlock):
            queries = [queries]
        usable: list[Query] = []
        for index, query in enumerate(queries):
            if isinstance(query, DataBlock):
                if self._target.embedding_model.supports_multimodal:
                    usable.append(query)
            elif isinstance(query, TextBlock):
                if query.text.strip():
                    usable.append(query)
            elif isinstance(query, str):
                if query.strip():
                    usable.append(query)
            else:
                raise TypeError(
                    f"queries[{index}] must be str, TextBlock or DataBlock, "
                    f"not {type(query).__name__}"
                )
        return usable


def merge(
    hits_per_query: list[list[VectorSearchResult]],
    score_threshold: float | None,
    diversity: float | None,
    min_relevance: float | None = None,
) -> list[VectorSearchResult]:
    """The hits of all queries, thresholded, one per (document, chunk), best first: by
    relevance where the store gives it, else by score; with `diversity`, by rank in its
    query's results (the order maximal marginal relevance picked them in)."""
    best: dict[tuple[str, int], tuple[tuple[float, ...], VectorSearchResult]] = {}
    for hits in hits_per_query:
        for position, hit in enumerate(hits):
            if score_threshold is not None and hit.score < score_threshold:
                continue
            if min_relevance is not None and (
                hit.relevance is not None and hit.relevance < min_relevance
            ):
                continue
            order: tuple[float, ...]
            if diversity is not None:
                order = (float(position), -_relevance_or(hit), -hit.score)
            else:
                order = (-_relevance_or(hit), -hit.score)
            key = (hit.document_id, hit.chunk.chunk_index)
            if key not in best or order < best[key][0]:
                best[key] = (order, hit)
    return [hit for _, hit in sorted(best.values(), key=lambda item: item[0])]


def by_relevance(hits: list[VectorSearchResult]) -> list[VectorSearchResult]:
    """`hits` by relevance, best first (in their order where they have none)."""
    return sorted(hits, key=lambda hit: -_relevance_or(hit))


def _relevance_or(hit: VectorSearchResult) -> float:
    """A hit's relevance; hits without one (a store that cannot tell) rank equal."""
    return hit.relevance if hit.relevance is not None else 0.0


def collapse(ranked: list[VectorSearchResult], per_document: int) -> list[VectorSearchResult]:
    """`ranked` keeping at most `per_document` hits of each document, in order."""
    kept: list[VectorSearchResult] = []
    seen: dict[str, int] = {}
    for hit in ranked:
        if seen.get(hit.document_id, 0) < per_document:
            seen[hit.document_id] = seen.get(hit.document_id, 0) + 1
            kept.append(hit)
    return kept


SPREAD_FLOOR = DEFAULT_MIN_RELEVANCE
"""A hit of another document takes a place from a document's second or later hit only if
its relevance is at least this."""


def spread_documents(ranked: list[VectorSearchResult], top_k: int) -> list[VectorSearchResult]:
    """The `top_k` hits of `ranked` to show, in order: every document with a hit of relevance
    at least `SPREAD_FLOOR` shows its best hit before any document shows a second one, and
    hits below the floor come last, so one long document cannot fill the list while other
    documents are relevant, and a list of one relevant document is not filled with
    irrelevant ones. Hits without relevance keep their places."""
    if len(ranked) <= top_k:
        return ranked
    firsts: list[int] = []
    seconds: list[int] = []
    rest: list[int] = []
    seen: set[str] = set()
    for index, hit in enumerate(ranked):
        if hit.relevance is not None and hit.relevance < SPREAD_FLOOR:
            rest.append(index)
        elif hit.document_id in seen and hit.relevance is not None:
            seconds.append(index)
        else:
            firsts.append(index)
        seen.add(hit.document_id)
    chosen = sorted((firsts + seconds + rest)[:top_k])
    return [ranked[index] for index in chosen]


def same_text_key(hit: VectorSearchResult) -> str:
    """What makes two hits copies: the sha256 of the chunk's text with white space runs folded
    (of a DataBlock, of its content as JSON)."""
    content = hit.chunk.content
    if isinstance(content, TextBlock):
        folded = " ".join(content.text.split())
        return hashlib.sha256(f"text\n{folded}".encode("utf-8", "surrogatepass")).hexdigest()
    return hashlib.sha256(f"data\n{content.model_dump_json()}".encode()).hexdigest()


def collapse_same_text(ranked: list[VectorSearchResult]) -> list[VectorSearchResult]:
    """`ranked` with one hit per text, in order: the first (best) copy of each, listing the
    others in `also_in`."""
    kept: dict[str, VectorSearchResult] = {}
    others: dict[str, list[DuplicateSource]] = {}
    for hit in ranked:
        key = same_text_key(hit)
        if key not in kept:
            kept[key] = hit
            continue
        others.setdefault(key, []).append(
            DuplicateSource(
                document_id=hit.document_id,
                source=hit.chunk.source,
                chunk_index=hit.chunk.chunk_index,
                score=hit.score,
                metadata=hit.chunk.metadata,
            )
        )
    return [
        hit.model_copy(update={"also_in": [*hit.also_in, *others[key]]}) if key in others else hit
        for key, hit in kept.items()
    ]


def _first_error(error: ValidationError) -> str:
    """The first problem of a validation error as `field: message`."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def curves_for(model: EmbeddingModelBase, text: str | None, *, blind: bool) -> RelevanceCurves:
    """How the hits of a query of `text` (None: an image) are judged: by the model's curves
    for the query's script, and by their lexical evidence alone in a hybrid search where the
    model cannot read the query (`blind`: its similarity is noise there)."""
    curves = model.relevance_curves("cjk" if text and mostly_cjk(text) else "alphabetic")
    return curves.ignoring_similarity() if blind else curves
