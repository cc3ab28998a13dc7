"""`Quota`: how much one tenant may keep (knowledge bases, documents, stored bytes)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Quota(BaseModel):
    """Limits for one tenant."""

    model_config = ConfigDict(extra="forbid")

    knowledge_bases: int = Field(default=100, ge=0)
    documents: int = Field(default=10_000, ge=0)
    storage_bytes: int = Field(default=5 * 1024**3, ge=0)
    """Total size of the tenant's stored uploads."""
