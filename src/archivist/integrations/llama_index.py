"""Archivist as a LlamaIndex retriever: `ArchivistRetriever` answers a query with the passages
of a local `KnowledgeBase` or of a knowledge base of a running service, as scored `TextNode`s
that any LlamaIndex query engine, chat engine or agent can use.

Needs the `llama-index` extra (`pip install 'archivist[llama-index]'`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from archivist._util.extras import require
from archivist.integrations.metadata_filters import Comparison, comparisons_filter, refused
from archivist.integrations.source import (
    LocalSource,
    Passage,
    PassageSource,
    SearchOptions,
    ServiceSource,
    search_sync,
)

require("llama-index", "llama_index.core", "archivist.integrations.llama_index")

from llama_index.core.callbacks import CallbackManager  # noqa: E402  # after `require`
from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402
from llama_index.core.vector_stores import (  # noqa: E402
    ExactMatchFilter,
    FilterCondition,
    MetadataFilter,
    MetadataFilters,
)

if TYPE_CHECKING:
    from archivist.rag.knowledge.knowledge_base import KnowledgeBase
    from archivist.rag.store.base import SearchMode

__all__ = ["ArchivistRetriever", "archivist_filters", "passage_node"]

HIDDEN_FROM_THE_LLM = ["document_id", "chunk_index"]
"""Metadata a node keeps for code but leaves out of the text an LLM reads (which shows the
citation, source and page with each passage)."""


class ArchivistRetriever(BaseRetriever):
    """The best passages of an Archivist knowledge base for a query, best first, each a
    `TextNode` scored by its relevance (the estimated probability, 0..1, that it is
    relevant). Build it with `from_knowledge_base` or `from_service`, or over any
    `PassageSource`; `top_k`, `mode`, `filters`, `max_per_document` and `min_relevance` are
    `SearchOptions`. Filters are Archivist's (`paths`, `types`, `since`, `where`) or
    LlamaIndex's `MetadataFilters` (see `archivist_filters`)."""

    def __init__(
        self,
        source: PassageSource,
        *,
        top_k: int = 5,
        mode: SearchMode | None = None,
        filters: MetadataFilters | dict[str, Any] | None = None,
        max_per_document: int | None = None,
        min_relevance: float | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        self.source = source
        self.options = SearchOptions(
            top_k=top_k,
            mode=mode,
            filters=archivist_filters(filters) if isinstance(filters, MetadataFilters) else filters,
            max_per_document=max_per_document,
            min_relevance=min_relevance,
        )

    @classmethod
    def from_knowledge_base(
        cls, knowledge_base: KnowledgeBase, **options: Any
    ) -> ArchivistRetriever:
        """Over an open local `KnowledgeBase` (it stays the caller's to close)."""
        return cls(LocalSource(knowledge_base), **options)

    @classmethod
    def from_service(
        cls, url: str, api_key: str, knowledge_base: str, **options: Any
    ) -> ArchivistRetriever:
        """Over knowledge base `knowledge_base` of the service at `url`, as the tenant whose
        key `api_key` is."""
        return cls(ServiceSource(url, api_key, knowledge_base), **options)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        passages = search_sync(self.source, query_bundle.query_str, self.options)
        return [passage_node(passage) for passage in passages]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        passages = await self.source.search(query_bundle.query_str, self.options)
        return [passage_node(passage) for passage in passages]


def passage_node(passage: Passage) -> NodeWithScore:
    """`passage` as a scored `TextNode` whose id is the same for the same chunk on every
    search, so LlamaIndex's deduplication and postprocessors see one chunk as one node."""
    node = TextNode(
        id_=passage.id,
        text=passage.text,
        metadata=passage.labelled_metadata(),
        excluded_llm_metadata_keys=HIDDEN_FROM_THE_LLM,
        excluded_embed_metadata_keys=HIDDEN_FROM_THE_LLM,
    )
    return NodeWithScore(node=node, score=passage.relevance)


def archivist_filters(filters: MetadataFilters) -> dict[str, Any]:
    """LlamaIndex's `MetadataFilters` in Archivist's form: filters joined by AND (nested
    too) with `==`, `>`, `>=`, `<`, `<=` on chunk metadata such as `page` (numbers or ISO
    dates), and `==` or `in` on `source` (the file name). Anything else (OR, NOT, `!=`,
    `nin`, `contains` ..., or `document_id`) raises InvalidArgumentError: Archivist filters
    inside the store, before ranking, and does not drop hits afterwards."""
    return comparisons_filter(_comparisons(filters))


def _comparisons(filters: MetadataFilters) -> list[Comparison]:
    if filters.condition not in (None, FilterCondition.AND):
        raise refused(f"the condition {filters.condition.value!r} is not supported; use AND")
    found: list[Comparison] = []
    for each in filters.filters:
        if isinstance(each, MetadataFilters):
            found.extend(_comparisons(each))
        elif isinstance(each, MetadataFilter):
            found.append((each.key, each.operator.value, each.value))
        else:  # ExactMatchFilter, LlamaIndex's older form of `==`
            assert isinstance(each, ExactMatchFilter)
            found.append((each.key, "==", each.value))
    return found
