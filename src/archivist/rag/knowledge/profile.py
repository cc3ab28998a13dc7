"""`KnowledgeProfile` and `StoreSpec`: a knowledge base as every shell records and opens it.

The CLI's home and the service's catalog persist profiles; the CLI, MCP, the service and eval
turn their own arguments into a profile and a store spec, then open the knowledge base through
`archivist.rag.knowledge.factories`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from archivist.embedding.registry import DEFAULT_EMBEDDING_MODEL
from archivist.rag.chunker.settings import ChunkSettings

__all__ = ["KnowledgeProfile", "StoreKind", "StoreSpec"]

StoreKind = Literal["edge", "qdrant", "pgvector"]


class KnowledgeProfile(ChunkSettings):
    """What a knowledge base is: its name and description, how its text is cut and embedded,
    the collection that holds it, and whose records a handle on it sees.

    `chunk_size` and `overlap` follow `ChunkSettings` (None chunk size: the model's input
    length). Unknown keys are ignored, so a record written by a newer version still reads.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    embedding_model: str = Field(
        default=DEFAULT_EMBEDDING_MODEL,
        min_length=1,
        description="a registry name, `dashscope:MODEL[:DIMS]` or `openai:MODEL:DIMS`",
    )
    dimensions: int | None = Field(
        default=None, ge=0, description="the model's vector size, once it has been loaded"
    )
    context_header: bool = Field(
        default=False, description="start each chunk with its document's title"
    )
    collection: str | None = Field(
        default=None, min_length=1, description="the store's collection; None: the name"
    )
    tenant: str | None = Field(
        default=None, description="whose records a handle sees; None: those of no tenant"
    )

    @model_validator(mode="before")
    @classmethod
    def _unset_overlap(cls, data: Any) -> Any:
        """A record written before overlap was recorded (None) takes the default."""
        if isinstance(data, dict) and data.get("overlap", 0) is None:
            return {key: value for key, value in data.items() if key != "overlap"}
        return data

    @property
    def collection_name(self) -> str:
        """The collection the knowledge base's records live in."""
        return self.collection or self.name

    def recorded(self) -> dict[str, Any]:
        """The profile as a home or catalog stores it: without the tenant, which a shell
        supplies when it opens the knowledge base."""
        return self.model_dump(mode="json", exclude={"tenant"})


class StoreSpec(BaseModel):
    """Where vectors live: Qdrant Edge on disk (`path`) or in memory (no path), a Qdrant
    server (`url`, `api_key`), or PostgreSQL with pgvector (`url`).

    `options` are the store class's own keyword arguments (for example
    `auto_optimize_threshold` or `table_prefix`); `in_child_process` runs Edge in a child
    process, so the engine's indexing never holds the caller's GIL.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: StoreKind = "edge"
    path: Path | None = None
    url: str | None = Field(default=None, min_length=1)
    api_key: str | None = Field(default=None, repr=False)
    in_child_process: bool = False
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _fits_kind(self) -> StoreSpec:
        if self.kind == "edge" and self.url is not None:
            raise ValueError("Qdrant Edge takes a path, not a url")
        if self.kind != "edge" and (self.url is None or self.path is not None):
            raise ValueError(f"a {self.kind} store takes a url, not a path")
        if self.in_child_process and self.kind != "edge":
            raise ValueError("only Qdrant Edge runs in a child process")
        return self
