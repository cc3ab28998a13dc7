"""The embedding-free repeat path: recent answers from memory, private to their knowledge base
and tenant, dead after any write."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_helpers import client, new_key, running_service, wait_final

from archivist.embedding import LocalEmbeddingModel
from archivist.message import TextBlock
from archivist.rag import KnowledgeBase, QdrantStore
from archivist.rag.document import Chunk
from archivist.rag.knowledge import query_cache
from archivist.service import ServiceSettings

SEARCH = "/v1/knowledge-bases/{}/search"


class Store:
    """Any object a cache files answers under, as it does a real store."""


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Queries that reached `KnowledgeBase.search` (and so the model and the store)."""
    seen: list[str] = []
    original = KnowledgeBase.search

    async def search(self: KnowledgeBase, queries: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(queries)
        return await original(self, queries, *args, **kwargs)

    monkeypatch.setattr(KnowledgeBase, "search", search)
    return seen


@pytest.fixture(scope="module")
def cached_service(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, dict[str, str]]]:
    home: Path = tmp_path_factory.mktemp("cache-home")
    settings = ServiceSettings(home=home, query_cache_seconds=60)
    keys = {tenant: new_key(settings, tenant) for tenant in ("acme", "globex")}
    with running_service(settings) as url:
        yield url, keys


def upload(http: Any, kb: str, name: str, text: str) -> str:
    response = http.post(
        f"/v1/knowledge-bases/{kb}/documents",
        files=[("files", (name, text.encode(), "text/plain"))],
    )
    assert response.status_code == 202, response.text
    (item,) = response.json()["items"]
    (doc,) = wait_final(http, kb, [item["id"]])
    assert doc["status"] == "ready", doc
    return str(item["id"])


def test_a_repeated_search_is_answered_from_memory_until_a_write(
    cached_service: tuple[str, dict[str, str]], searches: list[str]
) -> None:
    url, keys = cached_service
    with client(url, keys["acme"]) as http:
        http.post("/v1/knowledge-bases", json={"name": "repeat"})
        upload(http, "repeat", "orchards.txt", "Apple orchards are pruned in late winter.")
        ask = {"query": "when are orchards pruned", "top_k": 3}
        first = http.post(SEARCH.format("repeat"), json=ask)
        second = http.post(SEARCH.format("repeat"), json=ask)
        assert first.status_code == second.status_code == 200
        assert second.json() == first.json() and len(first.json()["hits"]) == 1
        assert searches == ["when are orchards pruned"]  # the second never searched
        # Another top_k is another request.
        http.post(SEARCH.format("repeat"), json={**ask, "top_k": 1})
        assert len(searches) == 2

        # A new document: the cached answer is dead, the next search sees it.
        added = upload(http, "repeat", "more.txt", "Pear orchards are pruned in early spring.")
        third = http.post(SEARCH.format("repeat"), json=ask).json()["hits"]
        assert len(searches) == 3
        assert added in {h["document_id"] for h in third}

        # Deleting it: dead again, and it is gone from the answer.
        assert http.delete(f"/v1/knowledge-bases/repeat/documents/{added}").status_code == 204
        fourth = http.post(SEARCH.format("repeat"), json=ask).json()["hits"]
        assert len(searches) == 4
        assert added not in {h["document_id"] for h in fourth}


def test_answers_stay_with_their_tenant_and_knowledge_base(
    cached_service: tuple[str, dict[str, str]], searches: list[str]
) -> None:
    url, keys = cached_service
    ask = {"query": "what does the secret ledger say", "top_k": 5}
    answers = {}
    for tenant, text in (
        ("acme", "The secret ledger of acme lists copper."),
        ("globex", "The secret ledger of globex lists tin."),
    ):
        with client(url, keys[tenant]) as http:
            http.post("/v1/knowledge-bases", json={"name": "ledger"})
            upload(http, "ledger", f"{tenant}.txt", text)
            answers[tenant] = http.post(SEARCH.format("ledger"), json=ask).json()["hits"]
    assert len(searches) == 2  # same name, same query: two tenants, two searches
    assert "copper" in answers["acme"][0]["text"] and "tin" in answers["globex"][0]["text"]
    with client(url, keys["globex"]) as http:
        again = http.post(SEARCH.format("ledger"), json=ask).json()["hits"]
        assert again == answers["globex"]
        # The same tenant's other knowledge base has its own answers.
        http.post("/v1/knowledge-bases", json={"name": "other"})
        assert http.post(SEARCH.format("other"), json=ask).json()["hits"] == []
    assert len(searches) == 3
    with client(url, keys["acme"]) as http:
        assert http.post(SEARCH.format("ledger"), json=ask).json()["hits"] == answers["acme"]
    assert len(searches) == 3


def test_a_cache_of_zero_seconds_always_searches(tmp_path: Path, searches: list[str]) -> None:
    settings = ServiceSettings(home=tmp_path, query_cache_seconds=0)
    key = new_key(settings, "acme")
    with running_service(settings) as url, client(url, key) as http:
        http.post("/v1/knowledge-bases", json={"name": "kb"})
        for _ in range(2):
            assert http.post(SEARCH.format("kb"), json={"query": "x"}).status_code == 200
    assert searches == ["x", "x"]


async def test_every_write_of_a_handle_moves_its_collection_on(tmp_path: Path) -> None:
    """insert, delete and repair each end cached answers, a failed write too; other
    collections and stores keep theirs."""
    async with QdrantStore(path=tmp_path / "a") as store, QdrantStore(path=tmp_path / "b") as other:
        kb = KnowledgeBase("kb", "", LocalEmbeddingModel(), store, "c1")
        cache: query_cache.QueryCache[str] = query_cache.QueryCache(ttl=60)

        def remember() -> None:
            for s, c in ((store, "c1"), (store, "c2"), (other, "c1")):
                cache.put(s, c, "scope", "q", f"{c}", seen=query_cache.generation(s, c))

        remember()
        chunk = Chunk(content=TextBlock(text="hello"), source="x", chunk_index=0, total_chunks=1)
        document_id = await kb.insert_document([chunk])
        assert cache.get(store, "c1", "scope", "q") is None
        assert cache.get(store, "c2", "scope", "q") == "c2"
        assert cache.get(other, "c1", "scope", "q") == "c1"
        remember()
        await kb.delete_document(document_id)
        assert cache.get(store, "c1", "scope", "q") is None
        remember()
        await kb.repair()
        assert cache.get(store, "c1", "scope", "q") is None
        remember()
        with pytest.raises(ValueError):
            await kb.delete_document("")
        assert cache.get(store, "c1", "scope", "q") is None


def test_entries_expire_and_the_size_bound_holds() -> None:
    store = Store()
    cache: query_cache.QueryCache[bytes] = query_cache.QueryCache(ttl=0.2, maxsize=10, sizeof=len)
    cache.put(store, "c", "s", "a", b"12345", seen=0)
    cache.put(store, "c", "s", "b", b"12345", seen=0)
    cache.put(store, "c", "s", "c", b"12345", seen=0)  # over 10 bytes: the oldest goes
    assert cache.get(store, "c", "s", "a") is None and cache.get(store, "c", "s", "c") == b"12345"
    time.sleep(0.3)
    assert cache.get(store, "c", "s", "c") is None
    with pytest.raises(ValueError, match="ttl"):
        query_cache.QueryCache(ttl=0)


def test_an_answer_computed_across_a_write_is_never_served() -> None:
    """`seen` is read before the search: a write that lands during it kills the answer."""
    store = Store()
    cache: query_cache.QueryCache[str] = query_cache.QueryCache(ttl=60)
    seen = query_cache.generation(store, "c")
    query_cache.written(store, "c")  # a write finishing while the search ran
    cache.put(store, "c", "s", "q", "stale", seen=seen)
    assert cache.get(store, "c", "s", "q") is None
