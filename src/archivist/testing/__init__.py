"""Test suites a vector store runs to prove it keeps the `VectorStoreBase` contract.

One mixin per part of the contract; a store's test class combines the core mixins with one per
capability its `StoreCapabilities` declares, and gives a `store` fixture that yields an entered
store (Cosine distance):

    from archivist.testing.store import (
        ChunkListingTests, CollectionTests, DeclarationTests, DenseSearchTests, ReplaceTests,
        ScopedDeleteTests, WriteTests,
    )

    class TestMyStore(
        CollectionTests, WriteTests, DenseSearchTests, ReplaceTests,  # every store
        ScopedDeleteTests, ChunkListingTests,  # what MyStore declares
        DeclarationTests,  # the combination above is exactly what MyStore declares
    ):
        @pytest.fixture
        async def store(self): ...

Capability mixins: `archivist.testing.store` (`ScopedDeleteTests`, `ChunkListingTests`,
`AtomicReplaceTests`, `GenerationTests`, `RelevanceTests`), `archivist.testing.hybrid_store`
(`HybridSearchTests`, `DiversityTests`), `archivist.testing.search_store` (`GroupingTests`,
`SearchFilterTests`). Each first checks that the store declares its capability, so nothing is
skipped. The suites need pytest and an async test runner (pytest-asyncio with
`asyncio_mode = "auto"`), which archivist itself does not install; call
`pytest.register_assert_rewrite("archivist.testing")` in your conftest.py for detailed assertion
messages.
"""
