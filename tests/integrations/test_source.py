"""The framework-neutral passage sources: options checked up front, a local knowledge base and
a service's over HTTP answering the same passages, and the sync bridge on and off a loop."""

from __future__ import annotations

import asyncio
import json
import pickle

import httpx
import pytest
from integrations_helpers import HeldKnowledgeBase, Service

from archivist._http.retry import RetryPolicy
from archivist.errors import ConfigurationError, InvalidArgumentError, StoreError
from archivist.integrations.source import (
    LocalSource,
    Passage,
    PassageSource,
    SearchOptions,
    ServiceSource,
    ServiceUnavailableError,
    search_sync,
)
from archivist.rag import KnowledgeBase
from archivist.rag.store.search_filter import SearchFilter


@pytest.mark.parametrize(
    ("options", "argument"),
    [
        ({"top_k": 0}, "top_k"),
        ({"mode": "fuzzy"}, "mode"),
        ({"max_per_document": -1}, "max_per_document"),
        ({"min_relevance": 1.5}, "min_relevance"),
        ({"filters": {"types": ["no such/type"]}}, "filters"),
        ({"filters": {"colour": "red"}}, "filters"),
        ({"filters": "*.md"}, "filters"),
    ],
)
def test_bad_options_fail_when_made_naming_the_argument(
    options: dict[str, object], argument: str
) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        SearchOptions(**options)  # type: ignore[arg-type]
    assert raised.value.argument == argument


def test_filters_are_held_as_a_search_filter_from_either_dict_form() -> None:
    ours = SearchOptions(filters={"types": ["md"], "where": {"page": {"gte": 2}}})
    theirs = SearchOptions(filters={"type": ["md"], "where": {"page": {"gte": 2}}})
    assert isinstance(ours.search_filter, SearchFilter)
    assert ours.search_filter == theirs.search_filter
    assert ours.search_filter.types == ("md",)


async def test_a_local_source_answers_cited_passages_best_first(local_kb: KnowledgeBase) -> None:
    source = LocalSource(local_kb)
    assert isinstance(source, PassageSource)
    passages = await source.search("how long should green tea steep", SearchOptions(top_k=3))
    best = passages[0]
    assert best.source == "tea.md" and best.chunk_index == 0 and best.page == 1
    assert best.citation == "tea.md, page 1, chunk 0"
    assert best.text.startswith("Green tea steeps")
    assert best.metadata["topic"] == "tea"
    relevances = [p.relevance for p in passages]
    assert all(r is not None and 0 <= r <= 1 for r in relevances)
    assert relevances == sorted(relevances, reverse=True)  # type: ignore[type-var]


async def test_local_filters_and_the_per_document_cap_hold(local_kb: KnowledgeBase) -> None:
    source = LocalSource(local_kb)
    capped = await source.search("tea", SearchOptions(top_k=4, max_per_document=1))
    assert len({p.document_id for p in capped}) == len(capped)
    only_txt = await source.search("tea", SearchOptions(filters={"types": ["txt"]}))
    assert {p.source for p in only_txt} == {"rust.txt"}
    later_pages = await source.search("tea", SearchOptions(filters={"where": {"page": {"gte": 2}}}))
    assert later_pages and all(p.page is not None and p.page >= 2 for p in later_pages)


async def test_sync_search_inside_a_running_loop_runs_on_a_worker_loop(
    local_kb: KnowledgeBase,
) -> None:
    """The store was opened on this test's loop, which is blocked while the search runs."""
    passages = search_sync(LocalSource(local_kb), "purring", SearchOptions(top_k=1))
    assert [p.source for p in passages] == ["cats.md"]


def test_sync_search_with_no_loop_and_a_store_held_on_another(held_kb: HeldKnowledgeBase) -> None:
    source = LocalSource(held_kb.knowledge_base)
    for _ in range(2):  # each call a new loop of its own
        assert search_sync(source, "ownership and lifetimes")[0].source == "rust.txt"
    assert asyncio.run(source.search("purring", SearchOptions(top_k=1)))[0].source == "cats.md"


async def test_a_service_source_searches_as_its_keys_tenant(service: Service) -> None:
    acme = ServiceSource(service.url, service.keys["acme"], "notes")
    globex = ServiceSource(service.url, service.keys["globex"], "notes")
    try:
        ours = await acme.search("green tea steeping", SearchOptions(top_k=10))
        theirs = await globex.search("green tea steeping", SearchOptions(top_k=10))
        assert ours[0].source == "acme-tea.md" and ours[0].citation.startswith("acme-tea.md")
        assert all(p.source.startswith("acme-") for p in ours)
        assert all(p.source.startswith("globex-") for p in theirs)
        assert not {p.document_id for p in ours} & {p.document_id for p in theirs}
        assert all(p.relevance is not None and 0 <= p.relevance <= 1 for p in ours)
        assert "tenant_id" not in ours[0].metadata
    finally:
        await acme.aclose()
        await globex.aclose()


async def test_a_service_source_sends_filters_and_the_cap(service: Service) -> None:
    source = ServiceSource(service.url, service.keys["acme"], "notes")
    try:
        tea = await source.search("tea", SearchOptions(top_k=10))
        assert sum(p.source == "acme-tea.md" for p in tea) > 1  # the file is several chunks
        capped = await source.search("tea", SearchOptions(top_k=10, max_per_document=1))
        assert len({p.document_id for p in capped}) == len(capped)
        only_txt = await source.search("tea", SearchOptions(filters={"types": ["txt"]}))
        assert {p.source for p in only_txt} == {"acme-rust.txt"}
        named = await source.search("tea", SearchOptions(filters={"paths": ["*-cats.md"]}))
        assert {p.source for p in named} == {"acme-cats.md"}
        assert await source.search("tea", SearchOptions(filters={"since": "2999-01-01"})) == []
        # sync inside this loop, which holds the pool and is blocked until the answer comes
        assert search_sync(source, "purring")[0].source == "acme-cats.md"
    finally:
        await source.aclose()


def test_a_service_source_works_from_sync_code_on_and_off_a_loop(service: Service) -> None:
    source = ServiceSource(service.url, service.keys["globex"], "notes")
    assert search_sync(source, "purring")[0].source == "globex-cats.md"

    async def inside() -> str:
        return search_sync(source, "borrow checker")[0].source

    assert asyncio.run(inside()) == "globex-rust.txt"
    asyncio.run(source.aclose())


async def test_service_failures_are_archivist_errors_that_say_what_to_fix(
    service: Service,
) -> None:
    refused = ServiceSource(service.url, "not-a-key", "notes")
    with pytest.raises(ConfigurationError, match="refused the API key") as raised:
        await refused.search("tea", SearchOptions())
    assert raised.value.setting == "api_key"
    unknown = ServiceSource(service.url, service.keys["acme"], "nothing")
    with pytest.raises(ConfigurationError, match="no knowledge base 'nothing'") as raised:
        await unknown.search("tea", SearchOptions())
    assert raised.value.setting == "knowledge_base"
    closed = ServiceSource("http://127.0.0.1:9", "key", "notes")
    with pytest.raises(StoreError, match="cannot be reached"):
        await closed.search("tea", SearchOptions())
    for source in (refused, unknown, closed):
        await source.aclose()
    source = ServiceSource(service.url, service.keys["acme"], "notes")
    with pytest.raises(InvalidArgumentError, match="refused the search.*path"):
        await source.search("tea", SearchOptions(filters={"paths": ["/notes/*"]}))
    with pytest.raises(InvalidArgumentError) as refused_mode:
        await source.search("tea", SearchOptions(mode="dense"))
    assert refused_mode.value.argument == "mode"
    await source.aclose()
    assert service.keys["acme"] not in repr(source)


def test_a_service_source_checks_its_arguments() -> None:
    with pytest.raises(InvalidArgumentError, match="url"):
        ServiceSource("localhost:8000", "key", "notes")
    with pytest.raises(InvalidArgumentError, match="api_key"):
        ServiceSource("http://localhost:8000", " ", "notes")
    with pytest.raises(InvalidArgumentError, match="knowledge base name") as raised:
        ServiceSource("http://localhost:8000", "key", "../etc")
    assert raised.value.argument == "knowledge_base"


HIT = {
    "score": 0.9,
    "relevance": 0.8,
    "document_id": "d1",
    "filename": "guide.pdf",
    "chunk_index": 7,
    "text": "Refunds take 30 days.",
    "citation": "guide.pdf, page 4, chunk 7",
    "metadata": {"page": 4},
}


def _answering(*answers: httpx.Response) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    """A client whose requests get `answers` in turn, and the requests it was sent."""
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return answers[min(len(sent), len(answers)) - 1]

    return httpx.AsyncClient(transport=httpx.MockTransport(answer)), sent


async def test_a_busy_service_is_asked_again_after_the_wait_it_names() -> None:
    client, sent = _answering(
        httpx.Response(503, headers={"Retry-After": "0"}, json={"detail": "overloaded"}),
        httpx.Response(200, json={"hits": [HIT, {**HIT, "chunk_index": 8, "text": None}]}),
    )
    source = ServiceSource("http://archivist.test/", "k", "docs", http_client=client)
    options = SearchOptions(top_k=3, min_relevance=0.5, filters={"where": {"page": {"gte": 2}}})
    [passage] = await source.search("refunds", options)
    assert passage == Passage(
        text="Refunds take 30 days.",
        relevance=0.8,
        document_id="d1",
        source="guide.pdf",
        chunk_index=7,
        page=4,
        citation="guide.pdf, page 4, chunk 7",
        metadata={"page": 4},
    )
    assert len(sent) == 2 and sent[1].url == "http://archivist.test/v1/knowledge-bases/docs/search"
    assert sent[1].headers["authorization"] == "Bearer k"
    assert json.loads(sent[1].content) == {
        "query": "refunds",
        "top_k": 3,
        "min_relevance": 0.5,
        "where": {"page": {"gte": 2.0}},
    }
    await client.aclose()


async def test_a_service_that_stays_busy_or_answers_nonsense_is_a_store_error() -> None:
    client, sent = _answering(
        httpx.Response(429, headers={"Retry-After": "0"}, json={"detail": "slow down"})
    )
    source = ServiceSource(
        "http://archivist.test", "k", "docs", http_client=client, retry=RetryPolicy(max_retries=1)
    )
    with pytest.raises(ServiceUnavailableError, match="HTTP 429: slow down") as raised:
        await source.search("refunds", SearchOptions())
    assert (raised.value.status, raised.value.retry_after, len(sent)) == (429, 0.0, 2)
    copy = pickle.loads(pickle.dumps(raised.value))
    assert (type(copy), copy.status, str(copy)) == (ServiceUnavailableError, 429, str(raised.value))
    for answer in (httpx.Response(200, text="<html>"), httpx.Response(200, json={"hots": []})):
        client, _ = _answering(answer)
        source = ServiceSource("http://archivist.test", "k", "docs", http_client=client)
        with pytest.raises(StoreError, match="no JSON|not the service's shape"):
            await source.search("refunds", SearchOptions())
