"""`GET /v1/supported-types`: what uploads are accepted (the page's file picker uses it)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from archivist.service.dependencies import State, Tenant
from archivist.service.indexing.upload_types import accepted_extensions
from archivist.service.operations.sessions import NO_CHAT_MODEL

router = APIRouter(prefix="/v1", tags=["documents"])


class OcrInUse(BaseModel):
    """What reads scanned pages and images on this service."""

    setting: str
    """The operator's `--ocr`: auto, off, tesseract or rapidocr."""
    engine: str | None
    """The engine in use (tesseract or rapidocr); null: scans are not read."""
    summary: str
    """One line: the engine and, for auto, why it was chosen or how to add one."""


class SupportedTypes(BaseModel):
    """File extensions some parser reads, the upload size limit, and what reads scans."""

    answers: bool
    """Whether questions are answered (`POST /v1/sessions/{id}/messages`): the service has a
    chat model. Without one the page shows the passages a search finds instead."""
    answers_hint: str | None
    """Without answers: how the service gets a chat model (the page shows it)."""
    extensions: list[str]
    max_upload_bytes: int
    tenant: str
    ocr: OcrInUse


@router.get("/supported-types")
async def supported_types(tenant: Tenant, state: State) -> SupportedTypes:
    """The accepted extensions and limit, what reads scans, plus the caller's tenant (the
    page shows it)."""
    settings = state.settings
    reader = state.registry.ocr
    engine = reader.engine if reader is not None else None
    return SupportedTypes(
        answers=state.chat_model is not None,
        answers_hint=NO_CHAT_MODEL if state.chat_model is None else None,
        extensions=accepted_extensions(state.registry, state.model.supports_multimodal),
        max_upload_bytes=settings.max_upload_bytes,
        tenant=tenant,
        ocr=OcrInUse(
            setting=settings.ocr,
            engine=engine.name if engine is not None else None,
            summary=settings.ocr_summary(),
        ),
    )
