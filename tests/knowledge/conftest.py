from collections.abc import AsyncIterator

import pytest

from archivist.embedding import EmbeddingModelBase, LocalEmbeddingModel
from archivist.rag.store.qdrant import QdrantStore


@pytest.fixture(scope="session")
def embedder() -> EmbeddingModelBase:
    """The offline default model, loaded once for the whole session."""
    return LocalEmbeddingModel()


@pytest.fixture
async def store() -> AsyncIterator[QdrantStore]:
    async with QdrantStore(location=":memory:") as opened:
        yield opened
