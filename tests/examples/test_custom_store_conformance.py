"""The example's InMemoryVectorStore against the shipped VectorStoreBase conformance suite."""

from collections.abc import AsyncIterator

import pytest
from custom_components import InMemoryVectorStore

from archivist.testing.store import VectorStoreConformance


@pytest.fixture
async def store() -> AsyncIterator[InMemoryVectorStore]:
    async with InMemoryVectorStore() as opened:
        yield opened


class TestInMemoryVectorStore(VectorStoreConformance):
    """Every conformance test against the store written in examples/custom_components.py."""
