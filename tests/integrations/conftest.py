"""A local knowledge base of a few real documents (the default embedding model, Qdrant Edge in
memory), and a running service whose two tenants hold the same documents under different
words, for the retrievers of other frameworks."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from integrations_helpers import DOCUMENTS, HeldKnowledgeBase, Service, fill

from archivist.embedding import EmbeddingModelBase, LocalEmbeddingModel
from archivist.rag import KnowledgeBase, QdrantStore

sys.path.insert(0, str(Path(__file__).parents[1] / "service"))
from service_helpers import client, new_key, running_service, wait_final

from archivist.service import ServiceSettings


def pytest_configure(config: pytest.Config) -> None:
    # langchain_tests' package also holds chat-model tests marked for plugins not loaded here
    for mark in ("vcr", "benchmark"):
        config.addinivalue_line("markers", f"{mark}: a mark of LangChain's chat-model tests")


@pytest.fixture(scope="module")
def embedding_model() -> EmbeddingModelBase:
    return LocalEmbeddingModel()


@pytest.fixture(scope="module")
def held_kb(embedding_model: EmbeddingModelBase) -> Iterator[HeldKnowledgeBase]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    store = QdrantStore(location=":memory:")

    async def opened() -> KnowledgeBase:
        await store.__aenter__()
        knowledge_base = KnowledgeBase("notes", "Notes", embedding_model, store, "notes")
        await fill(knowledge_base)
        return knowledge_base

    knowledge_base = asyncio.run_coroutine_threadsafe(opened(), loop).result()
    try:
        yield HeldKnowledgeBase(knowledge_base, loop)
    finally:
        asyncio.run_coroutine_threadsafe(store.__aexit__(None, None, None), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


@pytest.fixture
async def local_kb(embedding_model: EmbeddingModelBase) -> AsyncIterator[KnowledgeBase]:
    """The documents in a store opened on the test's own loop."""
    async with QdrantStore(location=":memory:") as store:
        knowledge_base = KnowledgeBase("notes", "Notes", embedding_model, store, "notes")
        await fill(knowledge_base)
        yield knowledge_base


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    home = tmp_path_factory.mktemp("service-home")
    settings = ServiceSettings(home=home, rate_per_second=1000, rate_burst=1000)
    keys = {tenant: new_key(settings, tenant) for tenant in ("acme", "globex")}
    with running_service(settings) as url:
        for tenant, key in keys.items():
            with client(url, key) as http:
                assert (
                    http.post(
                        "/v1/knowledge-bases",
                        json={"name": "notes", "chunk_size": 20, "overlap": 0},
                    ).status_code
                    == 201
                )
                files = [
                    ("files", (f"{tenant}-{name}", "\n\n".join(texts).encode(), "text/plain"))
                    for name, texts in DOCUMENTS.items()
                ]
                answer = http.post("/v1/knowledge-bases/notes/documents", files=files)
                assert answer.status_code == 202, answer.text
                assert {d["status"] for d in wait_final(http, "notes")} == {"ready"}
        yield Service(url, keys)
