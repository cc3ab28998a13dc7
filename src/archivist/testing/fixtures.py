"""Pytest fixtures for tests built on archivist: a real store and a hash embedding model.

Load it as a plugin from your `conftest.py` (needs pytest-asyncio with `asyncio_mode = "auto"`):

    pytest_plugins = ["archivist.testing.fixtures"]

Fixtures: `store`, an entered in-memory Qdrant Edge store (Cosine distance), and `hash_model`, a
32-dimension `HashEmbeddingModel`. A test module needing another Qdrant engine or options defines
its own `store` fixture with `entered_store`:

    @pytest.fixture(params=STORE_KINDS)
    async def store(request, tmp_path):
        async with entered_store(request.param, tmp_path) as opened:
            yield opened
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import pytest

from archivist.testing.embedding import HashEmbeddingModel

if TYPE_CHECKING:  # imported when a store is opened: loading the plugin stays cheap
    from archivist.rag.store.qdrant import QdrantStore

StoreKind: TypeAlias = Literal["edge-memory", "edge-path", "client-local"]
STORE_KINDS: tuple[StoreKind, ...] = ("edge-memory", "edge-path", "client-local")
"""Qdrant Edge in memory, Qdrant Edge persisting under a directory, and qdrant-client's local
mode (the stand-in for a Qdrant server)."""


@asynccontextmanager
async def entered_store(
    kind: StoreKind = "edge-memory", directory: Path | None = None, **options: Any
) -> AsyncIterator[QdrantStore]:
    """An entered `QdrantStore` of `kind`; `options` go to the store (`distance`, ...).

    `edge-path` persists under `directory / "store"`; `client-local` opens an in-memory
    `AsyncQdrantClient` and closes it after the store.
    """
    from archivist.rag.store.qdrant import QdrantStore

    if kind == "client-local":
        from qdrant_client import AsyncQdrantClient

        client = AsyncQdrantClient(location=":memory:")
        try:
            async with QdrantStore.from_client(client, **options) as opened:
                yield opened
        finally:
            await client.close()
        return
    if kind == "edge-path":
        if directory is None:
            raise ValueError("an edge-path store needs a directory")
        made = QdrantStore(path=directory / "store", **options)
    elif kind == "edge-memory":
        made = QdrantStore(location=":memory:", **options)
    else:
        raise ValueError(f"unknown store kind {kind!r}; expected one of {STORE_KINDS}")
    async with made as opened:
        yield opened


@pytest.fixture
async def store() -> AsyncIterator[QdrantStore]:
    """An entered in-memory Qdrant Edge store with Cosine distance."""
    async with entered_store("edge-memory") as opened:
        yield opened


@pytest.fixture
def hash_model() -> HashEmbeddingModel:
    """A 32-dimension `HashEmbeddingModel`."""
    return HashEmbeddingModel(dimensions=32)
