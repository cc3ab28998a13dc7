"""`archivist.integrations.llama_index.ArchivistRetriever` on the real llama-index-core: over a
local knowledge base and over a running service, alone and inside a `RetrieverQueryEngine`
whose answer's source nodes are the retriever's passages."""

from __future__ import annotations

from collections import Counter

import pytest

pytest.importorskip("llama_index.core", reason="needs the llama-index extra")

import handbook
from handbook import KB, SECRET, Served
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from llama_index.core.vector_stores import (
    ExactMatchFilter,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from archivist.errors import InvalidArgumentError
from archivist.integrations.llama_index import ArchivistRetriever
from archivist.rag import KnowledgeBase

handbook_kb, handbook_service = handbook.handbook_kb, handbook.handbook_service  # fixtures
LEAVE_QUESTION = "How many days of paid leave do employees get?"


def _rows(nodes: list[NodeWithScore]) -> list[tuple[str, float | None, str]]:
    return [(n.node.node_id, n.score, n.node.get_content()) for n in nodes]


def test_local_passages_are_scored_text_nodes_with_their_place(handbook_kb: KnowledgeBase) -> None:
    retriever = ArchivistRetriever.from_knowledge_base(handbook_kb, top_k=3)
    nodes = retriever.retrieve(LEAVE_QUESTION)
    assert 1 <= len(nodes) <= 3
    best = nodes[0]
    assert isinstance(best.node, TextNode)
    assert "25 days of paid leave" in best.node.get_content()
    meta = best.node.metadata
    assert meta["source"] == "leave.md"
    assert meta["chunk_index"] >= 0 and meta["document_id"]
    assert "leave.md" in meta["citation"]
    assert "page" in meta
    # the score is the relevance: a probability, best first
    scores = [n.score for n in nodes]
    assert all(s is not None and 0 < s <= 1 for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    # the LLM reads the citation with the text, not the internal ids
    for_llm = best.node.get_content(metadata_mode=MetadataMode.LLM)
    assert meta["citation"] in for_llm and meta["document_id"] not in for_llm
    # one chunk is one node id, on every search
    again = retriever.retrieve(LEAVE_QUESTION)
    assert _rows(again) == _rows(nodes)
    assert len({n.node.node_id for n in nodes}) == len(nodes)


async def test_the_async_path_answers_the_same(handbook_kb: KnowledgeBase) -> None:
    retriever = ArchivistRetriever.from_knowledge_base(handbook_kb, top_k=4)
    assert _rows(await retriever.aretrieve(LEAVE_QUESTION)) == _rows(
        await ArchivistRetriever.from_knowledge_base(handbook_kb, top_k=4).aretrieve(LEAVE_QUESTION)
    )
    nodes = await retriever.aretrieve(LEAVE_QUESTION)
    assert nodes[0].node.metadata["source"] == "leave.md"


def test_a_query_engine_answers_from_our_passages(handbook_kb: KnowledgeBase) -> None:
    retriever = ArchivistRetriever.from_knowledge_base(handbook_kb, top_k=3)
    llm = MockLLM(max_tokens=8)
    engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
    response = engine.query(LEAVE_QUESTION)
    assert _rows(response.source_nodes) == _rows(retriever.retrieve(LEAVE_QUESTION))
    assert response.source_nodes[0].node.metadata["source"] == "leave.md"
    assert str(response)  # the mock LLM's text: the synthesizer ran over the passages


async def test_an_async_query_engine_too(handbook_kb: KnowledgeBase) -> None:
    retriever = ArchivistRetriever.from_knowledge_base(handbook_kb, top_k=2)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=8))
    response = await engine.aquery(LEAVE_QUESTION)
    assert [n.node.metadata["source"] for n in response.source_nodes][:1] == ["leave.md"]


def test_filters_and_max_per_document_are_honoured(handbook_kb: KnowledgeBase) -> None:
    question = "leave days, travel, expenses and the guide"
    spread = ArchivistRetriever.from_knowledge_base(handbook_kb, top_k=8).retrieve(question)
    per_document = Counter(n.node.metadata["document_id"] for n in spread)
    assert max(per_document.values()) > 1  # the leave policy is several chunks
    capped = ArchivistRetriever.from_knowledge_base(
        handbook_kb, top_k=8, max_per_document=1
    ).retrieve(question)
    assert len(capped) == len({n.node.metadata["document_id"] for n in capped}) >= 3

    pdf_only = ArchivistRetriever.from_knowledge_base(
        handbook_kb, top_k=5, filters={"types": ["pdf"]}
    ).retrieve("What is Archivist?")
    assert pdf_only and {n.node.metadata["source"] for n in pdf_only} == {"guide.pdf"}
    assert all(isinstance(n.node.metadata["page"], int) for n in pdf_only)
    travel = ArchivistRetriever.from_knowledge_base(
        handbook_kb, filters={"paths": ["travel*"]}
    ).retrieve(LEAVE_QUESTION)
    assert {n.node.metadata["source"] for n in travel} <= {"travel.md"}


SECOND_PAGE_ON = MetadataFilters(
    filters=[
        MetadataFilter(key="source", value=["guide.pdf", "nothing.md"], operator=FilterOperator.IN),
        MetadataFilters(filters=[MetadataFilter(key="page", value=2, operator=">=")]),
    ]
)


def test_llama_index_metadata_filters_are_translated(handbook_kb: KnowledgeBase) -> None:
    def sources(filters: MetadataFilters, question: str = LEAVE_QUESTION) -> list[NodeWithScore]:
        return ArchivistRetriever.from_knowledge_base(
            handbook_kb, top_k=10, filters=filters
        ).retrieve(question)

    travel = sources(MetadataFilters(filters=[ExactMatchFilter(key="source", value="travel.md")]))
    assert travel and {n.node.metadata["source"] for n in travel} == {"travel.md"}
    later = sources(SECOND_PAGE_ON, "What is Archivist?")
    assert later and {n.node.metadata["source"] for n in later} == {"guide.pdf"}
    assert min(n.node.metadata["page"] for n in later) >= 2
    for refused in (
        MetadataFilters(
            filters=[MetadataFilter(key="page", value=1), MetadataFilter(key="page", value=2)],
            condition=FilterCondition.OR,
        ),
        MetadataFilters(filters=[MetadataFilter(key="page", value=2, operator="!=")]),
        MetadataFilters(filters=[MetadataFilter(key="document_id", value="x")]),
    ):
        with pytest.raises(InvalidArgumentError, match="^filters: "):
            ArchivistRetriever.from_knowledge_base(handbook_kb, filters=refused)


def test_over_the_service_as_its_tenant(handbook_service: Served) -> None:
    acme = ArchivistRetriever.from_service(
        handbook_service.url, handbook_service.keys["acme"], KB, top_k=3
    )
    nodes = acme.retrieve(LEAVE_QUESTION)
    assert nodes and nodes[0].node.metadata["source"] == "leave.md"
    assert "25 days of paid leave" in nodes[0].node.get_content()
    assert all(n.score is not None and 0 < n.score <= 1 for n in nodes)
    assert _rows(acme.retrieve(LEAVE_QUESTION)) == _rows(nodes)
    # the other tenant's knowledge base of the same name holds only its own secret
    globex = ArchivistRetriever.from_service(
        handbook_service.url, handbook_service.keys["globex"], KB, top_k=10
    )
    seen = globex.retrieve(LEAVE_QUESTION) + globex.retrieve("merger code name")
    assert {n.node.metadata["source"] for n in seen} == {"merger.txt"}
    assert all(SECRET not in n.node.get_content() for n in acme.retrieve("merger code name"))


async def test_over_the_service_in_a_query_engine_with_options(handbook_service: Served) -> None:
    key = handbook_service.keys["acme"]
    retriever = ArchivistRetriever.from_service(
        handbook_service.url, key, KB, top_k=8, max_per_document=1
    )
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=8))
    response = await engine.aquery("leave days, travel, expenses and the guide")
    ids = [n.node.metadata["document_id"] for n in response.source_nodes]
    assert len(ids) == len(set(ids)) >= 3
    pdf_only = ArchivistRetriever.from_service(
        handbook_service.url, key, KB, filters={"types": ["pdf"]}
    ).retrieve("What is Archivist?")
    assert pdf_only and {n.node.metadata["source"] for n in pdf_only} == {"guide.pdf"}
    later = ArchivistRetriever.from_service(
        handbook_service.url, key, KB, filters=SECOND_PAGE_ON
    ).retrieve("What is Archivist?")
    assert later and min(n.node.metadata["page"] for n in later) >= 2
