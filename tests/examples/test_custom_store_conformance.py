"""The example's InMemoryVectorStore against the shipped conformance mixins it declares."""

from collections.abc import AsyncIterator

import pytest
from custom_components import InMemoryVectorStore

from archivist.testing.store import (
    ChunkListingTests,
    CollectionTests,
    DeclarationTests,
    DenseSearchTests,
    ReplaceTests,
    ScopedDeleteTests,
    WriteTests,
)


@pytest.fixture
async def store() -> AsyncIterator[InMemoryVectorStore]:
    async with InMemoryVectorStore() as opened:
        yield opened


class TestInMemoryVectorStore(
    CollectionTests,
    WriteTests,
    DenseSearchTests,
    ReplaceTests,
    ScopedDeleteTests,
    ChunkListingTests,
    DeclarationTests,
):
    """The store of examples/custom_components.py: the core contract (its `replace_document`
    is the base class's), scoped delete and chunk listing."""
