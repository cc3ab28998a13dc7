"""Test suites a vector store runs to prove it keeps the `VectorStoreBase` contract.

Subclass the mixins in a `Test...` class of your own test module and give it a `store` fixture
that yields an entered store (Cosine distance):

    from archivist.testing.store import VectorStoreConformance

    class TestMyStore(VectorStoreConformance):
        @pytest.fixture
        async def store(self): ...

Stores with sparse or hybrid search add `archivist.testing.hybrid_store.HybridSearchConformance`
(and `DiversitySearchConformance` with `supports_diversity`). The suites need pytest and an
async test runner (pytest-asyncio with `asyncio_mode = "auto"`), which archivist itself does not
install; call `pytest.register_assert_rewrite("archivist.testing")` in your conftest.py for
detailed assertion messages.
"""
