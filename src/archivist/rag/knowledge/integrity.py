"""Whether each stored document is one whole version: `verify` finds leftovers of interrupted
writes, `repair` removes them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from archivist.rag.store.base import MetadataFilter, VectorStoreBase
from archivist.rag.store.core.generations import GenerationInfo, document_problem


class IncompleteDocument(BaseModel):
    """A document whose stored chunks are not one whole version of it."""

    model_config = ConfigDict(extra="forbid")

    document_id: str
    problem: str
    """What is wrong, e.g. "2 generations visible (...)" or "holds 3 of 5 chunks (...)"."""
    generations: list[GenerationInfo]
    """The writes whose chunks are visible, oldest first."""


class VerifyReport(BaseModel):
    """What `KnowledgeBase.verify` found within the handle's scope."""

    model_config = ConfigDict(extra="forbid")

    documents_checked: int
    incomplete: list[IncompleteDocument] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every document is whole."""
        return not self.incomplete


class RepairReport(BaseModel):
    """What `KnowledgeBase.repair` removed; `remaining` is a fresh verify after it."""

    model_config = ConfigDict(extra="forbid")

    removed: list[GenerationInfo] = Field(default_factory=list)
    documents_removed: list[str] = Field(default_factory=list)
    """Documents that had no complete version and are now gone entirely."""
    remaining: VerifyReport


async def verify(
    store: VectorStoreBase, collection: str, scope: MetadataFilter | None
) -> VerifyReport:
    """Every document of `collection` within `scope` checked from its chunk headers."""
    generations = await store.document_generations(collection, scope)
    by_document: dict[str, list[GenerationInfo]] = {}
    for info in generations:
        by_document.setdefault(info.document_id, []).append(info)
    incomplete = []
    for document_id in sorted(by_document):
        versions = sorted(by_document[document_id], key=lambda g: g.generation)
        problem = document_problem(versions)
        if problem is not None:
            incomplete.append(
                IncompleteDocument(document_id=document_id, problem=problem, generations=versions)
            )
    return VerifyReport(documents_checked=len(by_document), incomplete=incomplete)


async def repair(
    store: VectorStoreBase, collection: str, scope: MetadataFilter | None
) -> RepairReport:
    """Remove what `verify` reports: per document all but its newest complete version."""
    report = await verify(store, collection, scope)
    removed: list[GenerationInfo] = []
    gone: list[str] = []
    for document in report.incomplete:
        dropped = await store.repair_document(collection, document.document_id, scope)
        removed.extend(dropped)
        if dropped and len(dropped) == len(document.generations):
            gone.append(document.document_id)
    return RepairReport(
        removed=removed, documents_removed=gone, remaining=await verify(store, collection, scope)
    )
