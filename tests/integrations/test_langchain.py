"""`ArchivistRetriever` passes LangChain's standard retriever tests on a local knowledge base,
and serves a running service's knowledge base as its key's tenant, sync and async, with
filters and the per-document cap honoured."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from integrations_helpers import HeldKnowledgeBase, Service
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests
from pydantic import ValidationError

from archivist.errors import ConfigurationError, InvalidArgumentError
from archivist.integrations.langchain import ArchivistRetriever
from archivist.integrations.source import LocalSource, SearchOptions
from archivist.rag import KnowledgeBase


class TestStandardSuiteOnALocalKnowledgeBase(RetrieversIntegrationTests):
    """The store is held open on a loop of its own thread: `invoke` searches from no loop,
    `ainvoke` from the test's."""

    @pytest.fixture(autouse=True)
    def _source(self, held_kb: HeldKnowledgeBase) -> Iterator[None]:
        self.source = LocalSource(held_kb.knowledge_base)
        yield

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return ArchivistRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"source": self.source}

    @property
    def retriever_query_example(self) -> str:
        return "how long should tea steep"

    @property
    def num_results_arg_name(self) -> str:
        return "top_k"


async def test_documents_carry_the_passage_and_where_it_is_from(local_kb: KnowledgeBase) -> None:
    retriever = ArchivistRetriever.from_knowledge_base(local_kb, top_k=2)
    best, *_ = await retriever.ainvoke("green tea temperature")
    assert isinstance(best, Document)
    assert best.page_content.startswith("Green tea steeps")
    meta = best.metadata
    assert (meta["source"], meta["page"], meta["chunk_index"]) == ("tea.md", 1, 0)
    assert meta["citation"] == "tea.md, page 1, chunk 0"
    assert 0 <= meta["score"] <= 1 and meta["topic"] == "tea"
    assert best.id == f"{meta['document_id']}:0"


async def test_local_filters_and_cap_hold_as_fields_and_per_call(local_kb: KnowledgeBase) -> None:
    retriever = ArchivistRetriever.from_knowledge_base(local_kb, top_k=4, max_per_document=1)
    capped = await retriever.ainvoke("tea")
    assert len({d.metadata["document_id"] for d in capped}) == len(capped) == 3
    only_md = await retriever.ainvoke("tea", filters={"types": ["md"]})
    assert {d.metadata["source"] for d in only_md} == {"tea.md", "cats.md"}
    later = await retriever.ainvoke("tea", max_per_document=None, filters={"where": {"page": 3}})
    assert [d.metadata["citation"] for d in later] == ["tea.md, page 3, chunk 2"]
    # a sync call on a running loop: the search runs on a worker thread's loop
    assert [d.metadata["source"] for d in retriever.invoke("purring", top_k=1)] == ["cats.md"]


def test_bad_settings_fail_when_the_retriever_is_made(held_kb: HeldKnowledgeBase) -> None:
    source = LocalSource(held_kb.knowledge_base)
    with pytest.raises(ValidationError, match="top_k"):
        ArchivistRetriever(source=source, top_k=0)
    with pytest.raises(ValidationError, match="filters"):
        ArchivistRetriever(source=source, filters={"colour": "red"})
    with pytest.raises(ValidationError, match="source"):
        ArchivistRetriever(source="not a source")
    retriever = ArchivistRetriever(source=source)
    with pytest.raises(InvalidArgumentError, match="unknown search settings"):
        retriever.invoke("tea", k=3)


def _sources(documents: list[Document]) -> list[str]:
    return [document.metadata["source"] for document in documents]


def test_a_service_knowledge_base_sync_and_async_as_the_keys_tenant(service: Service) -> None:
    acme = ArchivistRetriever.from_service(service.url, service.keys["acme"], "notes", top_k=10)
    globex = ArchivistRetriever.from_service(service.url, service.keys["globex"], "notes")
    ours = acme.invoke("green tea steeping")
    assert ours[0].metadata["source"] == "acme-tea.md"
    assert all(name.startswith("acme-") for name in _sources(ours))
    assert "tenant_id" not in ours[0].metadata
    theirs = asyncio.run(globex.ainvoke("green tea steeping", top_k=10))
    assert theirs and all(name.startswith("globex-") for name in _sources(theirs))
    ids = {d.metadata["document_id"] for d in ours}
    assert not ids & {d.metadata["document_id"] for d in theirs}
    assert all(0 <= d.metadata["score"] <= 1 for d in ours + theirs)
    asyncio.run(acme.aclose())
    asyncio.run(globex.aclose())


async def test_a_service_knowledge_base_honours_filters_and_the_cap(service: Service) -> None:
    retriever = ArchivistRetriever.from_service(
        service.url, service.keys["acme"], "notes", top_k=10, max_per_document=1
    )
    try:
        capped = await retriever.ainvoke("tea")
        assert len({d.metadata["document_id"] for d in capped}) == len(capped) == 3
        uncapped = await retriever.ainvoke("tea", max_per_document=None)
        assert _sources(uncapped).count("acme-tea.md") > 1
        only_txt = await retriever.ainvoke("tea", filters={"type": ["txt"]})
        assert _sources(only_txt) == ["acme-rust.txt"]
        # sync, from inside this running loop
        named = retriever.invoke("tea", filters={"paths": ["*-cats.md"]})
        assert _sources(named) == ["acme-cats.md"]
    finally:
        await retriever.aclose()


def test_a_service_retriever_says_what_is_wrong(service: Service) -> None:
    wrong_key = ArchivistRetriever.from_service(service.url, "not-a-key", "notes")
    with pytest.raises(ConfigurationError, match="refused the API key"):
        wrong_key.invoke("tea")
    with pytest.raises(InvalidArgumentError, match="default mode"):
        ArchivistRetriever.from_service(service.url, service.keys["acme"], "notes").invoke(
            "tea", mode="dense"
        )
    assert SearchOptions(mode="dense").mode == "dense"  # a local knowledge base takes a mode


def test_langchain_is_loaded_only_by_its_own_module() -> None:
    """The sources load no framework; the LangChain module without langchain-core says which
    extra brings it, in a fresh interpreter."""
    script = (
        "import sys, archivist.integrations.source\n"
        "assert not [m for m in sys.modules if m.startswith('langchain')], sys.modules\n"
        "sys.modules['langchain_core'] = None\n"
        "try:\n"
        "    import archivist.integrations.langchain\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "ArchivistRetriever needs the langchain extra: pip install 'archivist[langchain]'\n"
    )


def test_batch_searches_side_by_side(service: Service, held_kb: HeldKnowledgeBase) -> None:
    """`batch` runs `invoke` on several threads at once, each on a loop of its own."""
    queries = ["green tea", "borrow checker", "purring", "black tea"] * 3
    for retriever in (
        ArchivistRetriever.from_service(service.url, service.keys["acme"], "notes", top_k=1),
        ArchivistRetriever(source=LocalSource(held_kb.knowledge_base), top_k=1),
    ):
        found = retriever.batch(queries, {"max_concurrency": 4})
        names = [documents[0].metadata["source"].removeprefix("acme-") for documents in found]
        assert names == ["tea.md", "rust.txt", "cats.md", "tea.md"] * 3
