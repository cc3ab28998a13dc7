"""Archivist as a Haystack retriever: the `ArchivistRetriever` component answers a query with
the passages of a knowledge base of a running Archivist service, or of a local
`KnowledgeBase`, as scored `Document`s for the next component of a pipeline.

A component over the service serializes with its pipeline (`to_dict`, `Pipeline.dumps`): its
URL, knowledge base, options and the API key as a `Secret` (an environment variable's name,
never the key). One over a local `KnowledgeBase` holds an open store and model, which no
pipeline file can carry: it refuses to serialize and says so.

Needs the `haystack` extra (`pip install 'archivist[haystack]'`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from archivist._util.extras import require
from archivist.errors import ConfigurationError
from archivist.integrations.metadata_filters import Comparison, comparisons_filter, refused
from archivist.integrations.source import (
    LocalSource,
    Passage,
    PassageSource,
    SearchOptions,
    ServiceSource,
    search_sync,
)

require("haystack", "haystack", "archivist.integrations.haystack")

from haystack import Document, component, default_from_dict, default_to_dict  # noqa: E402
from haystack.core.errors import SerializationError  # noqa: E402
from haystack.utils import Secret  # noqa: E402

if TYPE_CHECKING:
    from archivist.rag.knowledge.knowledge_base import KnowledgeBase
    from archivist.rag.store.base import SearchMode

__all__ = ["API_KEY_VARIABLE", "ArchivistRetriever", "archivist_filters", "passage_document"]

API_KEY_VARIABLE = "ARCHIVIST_API_KEY"
"""The environment variable the component reads the service's API key from by default."""


@component
class ArchivistRetriever:
    """The best passages of an Archivist knowledge base for a query, best first, each a
    `Document` scored by its relevance (the estimated probability, 0..1, that it is relevant).

    Over the service at `url`: knowledge base `knowledge_base`, as the tenant of the key that
    `api_key` resolves to. Over a local knowledge base: `from_knowledge_base`. `top_k`,
    `mode`, `filters`, `max_per_document` and `min_relevance` are the defaults of every run;
    `top_k` and `filters` given to `run` replace them for that run. Filters are Haystack's
    (see `archivist_filters`) or Archivist's own (`paths`, `types`, `since`, `where`).
    """

    def __init__(
        self,
        url: str,
        knowledge_base: str,
        api_key: Secret = Secret.from_env_var(API_KEY_VARIABLE),  # noqa: B008  # Haystack's idiom
        *,
        top_k: int = 5,
        mode: SearchMode | None = None,
        filters: dict[str, Any] | None = None,
        max_per_document: int | None = None,
        min_relevance: float | None = None,
    ) -> None:
        self.url = url
        self.knowledge_base = knowledge_base
        self.api_key = api_key
        self.top_k = top_k
        self.mode = mode
        self.filters = filters
        self.max_per_document = max_per_document
        self.min_relevance = min_relevance
        self._source: PassageSource | None = None
        self._options(None, None)  # bad options fail here, not at the first run

    @classmethod
    def from_knowledge_base(
        cls, knowledge_base: KnowledgeBase, **options: Any
    ) -> ArchivistRetriever:
        """Over an open local `KnowledgeBase` (it stays the caller's to close); such a
        component runs in pipelines but does not serialize."""
        made = cls("", knowledge_base.name, **options)
        made._source = LocalSource(knowledge_base)
        return made

    def to_dict(self) -> dict[str, Any]:
        """The component as a pipeline file holds it: the API key as its `Secret`, which
        refuses to serialize a key given as a token."""
        if isinstance(self._source, LocalSource):
            raise SerializationError(
                "an ArchivistRetriever over a local KnowledgeBase holds an open store and "
                "cannot be serialized; serialize one over the service (url, knowledge_base, "
                "api_key=Secret.from_env_var(...)), or add the local one after loading"
            )
        return default_to_dict(
            self,
            url=self.url,
            knowledge_base=self.knowledge_base,
            api_key=self.api_key,
            top_k=self.top_k,
            mode=self.mode,
            filters=self.filters,
            max_per_document=self.max_per_document,
            min_relevance=self.min_relevance,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArchivistRetriever:
        """The component `to_dict` described; the key is resolved at its first run."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, list[Document]]:
        """The passages for `query`, best first, as `documents`."""
        passages = search_sync(self._passage_source(), query, self._options(top_k, filters))
        return {"documents": [passage_document(passage) for passage in passages]}

    @component.output_types(documents=list[Document])
    async def run_async(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, list[Document]]:
        """`run` for Haystack's `AsyncPipeline`."""
        source = self._passage_source()
        passages = await source.search(query, self._options(top_k, filters))
        return {"documents": [passage_document(passage) for passage in passages]}

    def _options(self, top_k: int | None, filters: dict[str, Any] | None) -> SearchOptions:
        return SearchOptions(
            top_k=self.top_k if top_k is None else top_k,
            mode=self.mode,
            filters=archivist_filters(self.filters if filters is None else filters),
            max_per_document=self.max_per_document,
            min_relevance=self.min_relevance,
        )

    def _passage_source(self) -> PassageSource:
        if self._source is None:
            key = self.api_key.resolve_value()
            if not key:
                raise ConfigurationError(f"no API key for {self.url}", setting="api_key")
            self._source = ServiceSource(self.url, key, self.knowledge_base)
        return self._source


def passage_document(passage: Passage) -> Document:
    """`passage` as a scored `Document` whose id is the same for the same chunk on every
    search (Haystack's joiners and rankers deduplicate by it)."""
    return Document(
        id=passage.id,
        content=passage.text,
        meta=passage.labelled_metadata(),
        score=passage.relevance,
    )


def archivist_filters(filters: dict[str, Any] | None) -> dict[str, Any] | None:
    """Haystack's filter syntax in Archivist's form; a dict of Archivist's form is returned
    as it is.

    A comparison or an AND of comparisons on `meta.KEY` translates: `==` and `>`, `>=`, `<`,
    `<=` (numbers or ISO dates) on chunk metadata such as `meta.page`, and `==` or `in` on
    `meta.source` (the file name). Anything else (OR, NOT, `!=`, `not in`, `content`, `id`,
    `meta.document_id` ...) raises InvalidArgumentError: Archivist filters inside the store,
    before ranking, and does not drop hits afterwards.
    """
    if filters is None or "operator" not in filters:
        return filters
    return comparisons_filter(_comparisons(filters))


def _comparisons(filters: dict[str, Any]) -> list[Comparison]:
    """The comparisons on `meta.KEY` that `filters` requires all of."""
    if filters.get("operator") == "AND":
        conditions = filters.get("conditions")
        if not isinstance(conditions, list):
            raise refused("AND takes a list of conditions")
        return [found for condition in conditions for found in _comparisons(condition)]
    field = filters.get("field")
    if not isinstance(field, str) or not field.startswith("meta."):
        raise refused(f"{filters.get('operator')!r} on {field!r} is not supported; use meta.KEY")
    return [(field.removeprefix("meta."), str(filters.get("operator")), filters.get("value"))]
