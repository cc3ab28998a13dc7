"""`StoreCapabilities`: what a vector store offers beyond the minimal contract, declared.

A store states its capabilities as a class attribute; the knowledge base reads them and never
guesses from method signatures. The defaults describe the minimal store (AgentScope's custom
store skeleton): dense search with the four positional arguments, whole-document delete, and
no chunk listing. `archivist.testing` has one test mixin per capability.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator

from archivist.errors import InvalidArgumentError
from archivist.rag.store.core.arguments import SEARCH_MODES, SearchArguments, SearchMode


class StoreCapabilities(BaseModel):
    """What one store class offers; every field off means the minimal contract."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    search_modes: frozenset[SearchMode] = frozenset({"dense"})
    """The modes collections of this store can offer ("dense" always); which ones a
    collection offers says `search_modes(collection)`."""
    diversity: bool = False
    """`search` takes `diversity` (results picked by maximal marginal relevance)."""
    grouping: bool = False
    """`search` takes `max_per_document` and still returns `top_k` results whenever that many
    documents match (grouped by the engine, or paged until full)."""
    search_filter: bool = False
    """`search` takes `search_filter` (paths, types, since, metadata ranges, `match`
    conditions) and applies it natively, before ranking."""
    relevance: bool = False
    """Hits carry `relevance`, the estimated probability (0..1) that they are relevant, and
    come in its order (the knowledge base then spreads a list over the relevant documents)."""
    scoped_delete: bool = False
    """`delete` takes `metadata_filter` and deletes only inside it: needed by knowledge bases
    with a `metadata_filter` (tenants), which also write through it."""
    chunk_listing: bool = False
    """`list_chunks` (and so `chunk_window`, search `context`) pages through a document."""
    atomic_replace: bool = False
    """`replace_document` streams the new version beside the old and drops the old one only
    once the new one is written, removing the new chunks if anything fails; without it, the
    base's `replace_document` holds the whole new version in memory, then deletes and inserts."""
    generations: bool = False
    """`document_generations` and `repair_document` work: `KnowledgeBase.verify`/`repair`."""

    @field_validator("search_modes")
    @classmethod
    def _has_dense(cls, modes: frozenset[SearchMode]) -> frozenset[SearchMode]:
        if "dense" not in modes:
            raise ValueError("search_modes must include 'dense'")
        return modes

    @property
    def search_options(self) -> bool:
        """Whether `search` takes the keyword arguments after the first four (`query_text`,
        `mode`, `diversity`, `max_per_document`, `search_filter`): it does once it declares any
        search capability; the minimal store's `search` may have only the first four."""
        return (
            self.search_modes != {"dense"}
            or self.diversity
            or self.grouping
            or self.search_filter
            or self.relevance
        )

    def ordered_modes(self) -> tuple[SearchMode, ...]:
        """`search_modes` in the order of `SEARCH_MODES`."""
        return tuple(mode for mode in SEARCH_MODES if mode in self.search_modes)

    def refuse_undeclared(self, arguments: SearchArguments, store: str) -> None:
        """ValueError naming `store` if `arguments` ask for a search option not declared."""
        asked = (
            (arguments.mode not in self.search_modes, f"{arguments.mode} search", "mode"),
            (
                arguments.diversity is not None and not self.diversity,
                "diversity (MMR) search",
                "diversity",
            ),
            (
                arguments.max_per_document is not None and not self.grouping,
                "max_per_document",
                "max_per_document",
            ),
            (
                arguments.search_filter is not None and not self.search_filter,
                "search filters (paths, types, since, where)",
                "search_filter",
            ),
        )
        for missing, what, argument in asked:
            if missing:
                raise InvalidArgumentError(f"{store} does not support {what}", argument=argument)
