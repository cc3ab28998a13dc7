import pytest

from archivist.embedding import EmbeddingModelBase, LocalEmbeddingModel


@pytest.fixture(scope="session")
def embedder() -> EmbeddingModelBase:
    """The offline default model, loaded once for the whole session."""
    return LocalEmbeddingModel()
