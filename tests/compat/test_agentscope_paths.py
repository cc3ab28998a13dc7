"""The import paths AgentScope users write: every name the seed page imports comes from the same
module with `agentscope` replaced by `archivist`, and is listed in that module's `__all__`."""

from __future__ import annotations

import importlib

import pytest

# module -> the names the seed page imports from it
SEED_IMPORTS: dict[str, tuple[str, ...]] = {
    "archivist.rag": (
        "TextParser",
        "PDFParser",
        "PPTParser",
        "ImageParser",
        "ApproxTokenChunker",
        "KnowledgeBase",
        "QdrantStore",
        "ParserBase",
        "Section",
        "Chunk",
        "ChunkerBase",
        "DocumentSummary",
        "VectorRecord",
        "VectorSearchResult",
        "VectorStoreBase",
    ),
    "archivist.message": ("TextBlock",),
    "archivist.credential": ("DashScopeCredential",),
    "archivist.embedding": ("DashScopeEmbeddingModel",),
    "archivist.middleware": ("RAGMiddleware",),
    "archivist.tool": ("Toolkit",),
}
PATHS = [(module, name) for module, names in SEED_IMPORTS.items() for name in names]


@pytest.mark.parametrize(("module", "name"), PATHS, ids=[f"{m}.{n}" for m, n in PATHS])
def test_seed_import_path_works(module: str, name: str) -> None:
    imported = importlib.import_module(module)
    assert getattr(imported, name) is not None
    assert name in imported.__all__
