"""`ChunkSettings`: chunk size and overlap, their defaults, and the one rule they obey."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from archivist.chunk_defaults import DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP
from archivist.errors import InvalidArgumentError


class ChunkSettings(BaseModel):
    """How text is cut: the chunkers, the CLI, the service and eval all take their chunk size
    and overlap defaults, bounds and the rule `overlap < chunk_size` from this model."""

    model_config = ConfigDict(extra="forbid")

    chunk_size: int | None = Field(
        default=DEFAULT_CHUNK_SIZE,
        gt=0,
        description="tokens per chunk; None: the embedding model's input length",
    )
    overlap: int = Field(
        default=DEFAULT_OVERLAP, ge=0, description="tokens shared by neighbouring chunks"
    )

    @model_validator(mode="after")
    def _overlap_below_chunk_size(self) -> Self:
        if self.chunk_size is not None and self.overlap >= self.chunk_size:
            raise InvalidArgumentError(
                f"overlap ({self.overlap}) must be smaller than chunk_size ({self.chunk_size})",
                argument="overlap",
            )
        return self

    @classmethod
    def of(cls, **values: Any) -> Self:
        """The settings of `values` (None: the default), or an InvalidArgumentError naming the
        first bad field in one line rather than pydantic's multi-line report."""
        try:
            return cls(**{name: value for name, value in values.items() if value is not None})
        except ValidationError as exc:
            first = exc.errors()[0]
            cause = first.get("ctx", {}).get("error")
            if isinstance(cause, InvalidArgumentError):
                raise cause from None
            field = ".".join(str(part) for part in first["loc"]) or None
            message = f"{field}: {first['msg']}" if field else first["msg"]
            raise InvalidArgumentError(message, argument=field) from None
