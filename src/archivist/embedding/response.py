"""What an embedding call returns: the vectors and what producing them cost."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class EmbeddingUsage(BaseModel):
    """Counters of one call.

    `truncated_inputs` counts inputs cut to the model's limit (never silent);
    `cached_inputs` counts inputs served from a cache instead of the model.
    """

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = Field(default=0, ge=0)
    truncated_inputs: int = Field(default=0, ge=0)
    cached_inputs: int = Field(default=0, ge=0)

    def __add__(self, other: EmbeddingUsage) -> EmbeddingUsage:
        return EmbeddingUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            truncated_inputs=self.truncated_inputs + other.truncated_inputs,
            cached_inputs=self.cached_inputs + other.cached_inputs,
        )


class EmbeddingResponse(BaseModel):
    """One vector per input, in input order, plus the usage of the call."""

    model_config = ConfigDict(extra="forbid")

    embeddings: list[list[float]]
    usage: EmbeddingUsage = Field(default_factory=EmbeddingUsage)
