"""`GET /v1/supported-types`: what uploads are accepted (the page's file picker uses it)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from archivist.service.dependencies import State, Tenant
from archivist.service.guards.upload_types import accepted_extensions

router = APIRouter(prefix="/v1", tags=["documents"])


class SupportedTypes(BaseModel):
    """File extensions some parser reads, and the upload size limit."""

    extensions: list[str]
    max_upload_bytes: int
    tenant: str


@router.get("/supported-types")
async def supported_types(tenant: Tenant, state: State) -> SupportedTypes:
    """The accepted extensions and limit, plus the caller's tenant (the page shows it)."""
    return SupportedTypes(
        extensions=accepted_extensions(state.registry, state.model.supports_multimodal),
        max_upload_bytes=state.settings.max_upload_bytes,
        tenant=tenant,
    )
