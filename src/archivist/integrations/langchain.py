"""`ArchivistRetriever`: an Archivist knowledge base as a LangChain retriever.

Needs `langchain-core` (`pip install 'archivist[langchain]'`). It searches a local
`KnowledgeBase` or a knowledge base of a running service, and returns one `Document` per
passage with where it is from in its metadata.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Self

from archivist._util.extras import require

require("langchain", "langchain_core", "ArchivistRetriever")

from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from pydantic import model_validator  # noqa: E402

from archivist.errors import InvalidArgumentError  # noqa: E402
from archivist.integrations.source import (  # noqa: E402
    LocalSource,
    Passage,
    PassageSource,
    SearchOptions,
    ServiceSource,
    search_sync,
)
from archivist.rag.store.base import SearchMode  # noqa: E402
from archivist.rag.store.search_filter import SearchFilter  # noqa: E402

if TYPE_CHECKING:
    from archivist.rag.knowledge.knowledge_base import KnowledgeBase

__all__ = ["ArchivistRetriever"]

_OPTIONS = frozenset(field.name for field in dataclasses.fields(SearchOptions))
"""The search settings a retriever holds, and a call may override."""


class ArchivistRetriever(BaseRetriever):
    """The `top_k` passages of an Archivist knowledge base best matching a query, best first.

    `source` is what is searched: `ArchivistRetriever.from_knowledge_base(kb)` for a local
    `KnowledgeBase` (its store kept open by the caller), `ArchivistRetriever.from_service(url,
    api_key, knowledge_base)` for one of a service, searched as the key's tenant. `mode`,
    `filters` (a `SearchFilter` or its dict form: `paths`, `types`, `since`, `where`),
    `max_per_document` and `min_relevance` are `SearchOptions`; a call may override any of
    them: `retriever.invoke("query", top_k=3, filters={"types": ["pdf"]})`.

    Each `Document` holds the passage's text; its metadata is the chunk's, plus `source`
    (the file name), `page` (None without pages), `score` (the passage's relevance, 0..1),
    `document_id`, `chunk_index` and `citation` ("guide.pdf, page 4, chunk 7"), which win over
    chunk metadata of the same names. Its `id` is `document_id:chunk_index`.
    """

    source: PassageSource
    top_k: int = 5
    mode: SearchMode | None = None
    filters: SearchFilter | dict[str, Any] | None = None
    max_per_document: int | None = None
    min_relevance: float | None = None

    @model_validator(mode="after")
    def _options_are_valid(self) -> Self:
        self.options()
        return self

    @classmethod
    def from_knowledge_base(cls, knowledge_base: KnowledgeBase, **settings: Any) -> Self:
        """A retriever of a `KnowledgeBase` in this process; `settings` are its fields."""
        return cls(source=LocalSource(knowledge_base), **settings)

    @classmethod
    def from_service(
        cls,
        url: str,
        api_key: str,
        knowledge_base: str,
        *,
        timeout: float = 30.0,
        **settings: Any,
    ) -> Self:
        """A retriever of knowledge base `knowledge_base` of the Archivist service at `url`,
        searched as the tenant of `api_key`; `settings` are its fields (`mode` must be None:
        the service searches in its default mode)."""
        return cls(source=ServiceSource(url, api_key, knowledge_base, timeout=timeout), **settings)

    def options(self, **overrides: Any) -> SearchOptions:
        """The search settings of this retriever, with `overrides` of some of them."""
        unknown = sorted(set(overrides) - _OPTIONS - {"verbose"})
        if unknown:
            raise InvalidArgumentError(
                f"unknown search settings {unknown}; known: {sorted(_OPTIONS)}",
                argument=unknown[0],
            )
        held = {name: getattr(self, name) for name in _OPTIONS}
        return SearchOptions(**(held | {k: v for k, v in overrides.items() if k in _OPTIONS}))

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **overrides: Any
    ) -> list[Document]:
        passages = search_sync(self.source, query, self.options(**overrides))
        return [document_of(passage) for passage in passages]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **overrides: Any
    ) -> list[Document]:
        passages = await self.source.search(query, self.options(**overrides))
        return [document_of(passage) for passage in passages]

    async def aclose(self) -> None:
        """Close the source's connections, if it holds any (a service's)."""
        close = getattr(self.source, "aclose", None)
        if close is not None:
            await close()


def document_of(passage: Passage) -> Document:
    """A passage as a LangChain `Document` (see `ArchivistRetriever` for its metadata)."""
    return Document(
        id=passage.id,
        page_content=passage.text,
        metadata={**passage.labelled_metadata(), "score": passage.relevance},
    )
