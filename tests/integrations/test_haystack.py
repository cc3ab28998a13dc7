"""`archivist.integrations.haystack.ArchivistRetriever` on the real haystack-ai: a component
over a local knowledge base and over a running service, in a `Pipeline` feeding a
`PromptBuilder`, and the pipeline's serialization round trip with the key as a `Secret`."""

from __future__ import annotations

from collections import Counter

import pytest

pytest.importorskip("haystack", reason="needs the haystack extra")

import handbook
from handbook import KB, SECRET, Served
from haystack import Document, Pipeline
from haystack.components.builders import PromptBuilder
from haystack.core.errors import SerializationError
from haystack.utils import Secret

from archivist.errors import ConfigurationError, InvalidArgumentError
from archivist.integrations.haystack import ArchivistRetriever
from archivist.rag import KnowledgeBase

handbook_kb, handbook_service = handbook.handbook_kb, handbook.handbook_service  # fixtures
LEAVE_QUESTION = "How many days of paid leave do employees get?"
TEMPLATE = """Answer from these passages only.
{% for document in documents %}[{{ document.meta.citation }}] {{ document.content }}
{% endfor %}Question: {{ question }}"""


def _rows(documents: list[Document]) -> list[tuple[str, float | None, str | None]]:
    return [(d.id, d.score, d.content) for d in documents]


def _pipeline(retriever: ArchivistRetriever) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("retriever", retriever)
    pipeline.add_component("prompt", PromptBuilder(template=TEMPLATE, required_variables="*"))
    pipeline.connect("retriever.documents", "prompt.documents")
    return pipeline


def test_local_passages_are_scored_documents_with_their_place(handbook_kb: KnowledgeBase) -> None:
    retriever = ArchivistRetriever.from_knowledge_base(handbook_kb, top_k=3)
    documents = retriever.run(LEAVE_QUESTION)["documents"]
    assert 1 <= len(documents) <= 3
    best = documents[0]
    assert best.content and "25 days of paid leave" in best.content
    assert best.meta["source"] == "leave.md" and "leave.md" in best.meta["citation"]
    assert best.meta["chunk_index"] >= 0 and best.meta["document_id"] and "page" in best.meta
    scores = [d.score for d in documents]
    assert all(s is not None and 0 < s <= 1 for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert _rows(retriever.run(LEAVE_QUESTION)["documents"]) == _rows(documents)
    assert len({d.id for d in documents}) == len(documents)
    assert len(retriever.run(LEAVE_QUESTION, top_k=1)["documents"]) == 1


def test_a_pipeline_builds_the_prompt_from_our_passages(handbook_kb: KnowledgeBase) -> None:
    retriever = ArchivistRetriever.from_knowledge_base(handbook_kb, top_k=2)
    out = _pipeline(retriever).run(
        {"retriever": {"query": LEAVE_QUESTION}, "prompt": {"question": LEAVE_QUESTION}},
        include_outputs_from={"retriever"},
    )
    documents = out["retriever"]["documents"]
    prompt = out["prompt"]["prompt"]
    assert documents[0].meta["source"] == "leave.md"
    for document in documents:
        assert f"[{document.meta['citation']}] {document.content}" in prompt
    assert prompt.endswith(f"Question: {LEAVE_QUESTION}")


async def test_a_pipeline_runs_it_asynchronously_too(handbook_kb: KnowledgeBase) -> None:
    pipeline = Pipeline()
    pipeline.add_component(
        "retriever", ArchivistRetriever.from_knowledge_base(handbook_kb, top_k=2)
    )
    out = await pipeline.run_async({"retriever": {"query": LEAVE_QUESTION}})
    assert out["retriever"]["documents"][0].meta["source"] == "leave.md"


def test_filters_and_max_per_document_are_honoured(handbook_kb: KnowledgeBase) -> None:
    question = "leave days, travel, expenses and the guide"
    spread = ArchivistRetriever.from_knowledge_base(handbook_kb, top_k=8).run(question)
    assert max(Counter(d.meta["document_id"] for d in spread["documents"]).values()) > 1
    capped = ArchivistRetriever.from_knowledge_base(handbook_kb, top_k=8, max_per_document=1)
    ids = [d.meta["document_id"] for d in capped.run(question)["documents"]]
    assert len(ids) == len(set(ids)) >= 3

    retriever = ArchivistRetriever.from_knowledge_base(handbook_kb, filters={"types": ["pdf"]})
    pdf_only = retriever.run("What is Archivist?")["documents"]
    assert pdf_only and {d.meta["source"] for d in pdf_only} == {"guide.pdf"}
    assert all(isinstance(d.meta["page"], int) for d in pdf_only)
    # filters given to a run replace the component's for that run
    travel = retriever.run(LEAVE_QUESTION, filters={"paths": ["travel*"]})["documents"]
    assert travel and {d.meta["source"] for d in travel} == {"travel.md"}


SECOND_PAGE_ON = {
    "operator": "AND",
    "conditions": [
        {"field": "meta.source", "operator": "in", "value": ["guide.pdf", "nothing.md"]},
        {"field": "meta.page", "operator": ">=", "value": 2},
    ],
}


def test_haystack_filters_are_translated(handbook_kb: KnowledgeBase) -> None:
    retriever = ArchivistRetriever.from_knowledge_base(handbook_kb, top_k=10)
    travel = {"field": "meta.source", "operator": "==", "value": "travel.md"}
    documents = retriever.run(LEAVE_QUESTION, filters=travel)["documents"]
    assert documents and {d.meta["source"] for d in documents} == {"travel.md"}
    later = retriever.run("What is Archivist?", filters=SECOND_PAGE_ON)["documents"]
    assert later and {d.meta["source"] for d in later} == {"guide.pdf"}
    assert min(d.meta["page"] for d in later) >= 2
    everything = retriever.run("What is Archivist?", filters={"types": ["pdf"]})["documents"]
    assert {d.meta["page"] for d in everything} > {d.meta["page"] for d in later}
    for refused in (
        {"operator": "OR", "conditions": [travel, travel]},
        {"field": "meta.page", "operator": "!=", "value": 2},
        {"field": "content", "operator": "==", "value": "x"},
        {"field": "meta.document_id", "operator": "==", "value": "x"},
        {"field": "meta.source", "operator": ">", "value": "a"},
    ):
        with pytest.raises(InvalidArgumentError, match="^filters: "):
            retriever.run(LEAVE_QUESTION, filters=refused)


def test_bad_options_fail_when_the_component_is_made() -> None:
    with pytest.raises(InvalidArgumentError, match="top_k"):
        ArchivistRetriever("http://127.0.0.1:9", KB, top_k=0)
    with pytest.raises(InvalidArgumentError, match="^filters: "):
        ArchivistRetriever("http://127.0.0.1:9", KB, filters={"operator": "OR", "conditions": []})


def test_a_local_component_says_it_cannot_be_serialized(handbook_kb: KnowledgeBase) -> None:
    pipeline = _pipeline(ArchivistRetriever.from_knowledge_base(handbook_kb))
    with pytest.raises(SerializationError, match="local KnowledgeBase"):
        pipeline.dumps()


def test_over_the_service_as_its_tenant(
    handbook_service: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACME_KEY", handbook_service.keys["acme"])
    monkeypatch.setenv("GLOBEX_KEY", handbook_service.keys["globex"])
    acme = ArchivistRetriever(handbook_service.url, KB, Secret.from_env_var("ACME_KEY"), top_k=3)
    documents = acme.run(LEAVE_QUESTION)["documents"]
    assert documents and documents[0].meta["source"] == "leave.md"
    assert documents[0].content and "25 days of paid leave" in documents[0].content
    assert all(d.score is not None and 0 < d.score <= 1 for d in documents)
    # another tenant's knowledge base of the same name holds only its own secret
    globex = ArchivistRetriever(
        handbook_service.url, KB, Secret.from_env_var("GLOBEX_KEY"), top_k=10
    )
    seen = globex.run(LEAVE_QUESTION)["documents"] + globex.run("merger code name")["documents"]
    assert {d.meta["source"] for d in seen} == {"merger.txt"}
    assert all(SECRET not in (d.content or "") for d in acme.run("merger code name")["documents"])
    # a tenant without that knowledge base is told so
    monkeypatch.setenv("INITECH_KEY", handbook_service.keys["initech"])
    initech = ArchivistRetriever(handbook_service.url, KB, Secret.from_env_var("INITECH_KEY"))
    with pytest.raises(ConfigurationError, match="no knowledge base 'handbook'"):
        initech.run(LEAVE_QUESTION)


def test_over_the_service_with_options(
    handbook_service: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCHIVIST_API_KEY", handbook_service.keys["acme"])
    capped = ArchivistRetriever(handbook_service.url, KB, top_k=8, max_per_document=1)
    ids = [d.meta["document_id"] for d in capped.run("leave days, travel, expenses")["documents"]]
    assert len(ids) == len(set(ids)) >= 3
    pdf_only = ArchivistRetriever(handbook_service.url, KB, filters={"types": ["pdf"]})
    documents = pdf_only.run("What is Archivist?")["documents"]
    assert documents and {d.meta["source"] for d in documents} == {"guide.pdf"}
    travel = pdf_only.run(LEAVE_QUESTION, filters={"paths": ["travel*"]}, top_k=1)["documents"]
    assert [d.meta["source"] for d in travel] == ["travel.md"]
    later = pdf_only.run("What is Archivist?", filters=SECOND_PAGE_ON)["documents"]
    assert later and min(d.meta["page"] for d in later) >= 2


def test_a_service_pipeline_round_trips_without_the_key(
    handbook_service: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = handbook_service.keys["acme"]
    monkeypatch.setenv("ACME_KEY", key)
    retriever = ArchivistRetriever(
        handbook_service.url,
        KB,
        Secret.from_env_var("ACME_KEY"),
        top_k=2,
        filters={"types": ["md"]},
        max_per_document=1,
        min_relevance=0.1,
    )
    pipeline = _pipeline(retriever)
    saved = pipeline.dumps()
    assert key not in saved and "ACME_KEY" in saved
    # Haystack loads classes only from modules the caller trusts
    loaded = Pipeline.loads(saved, allowed_modules=["archivist.integrations.haystack"])
    assert loaded.to_dict() == pipeline.to_dict()
    again = loaded.get_component("retriever")
    assert isinstance(again, ArchivistRetriever)
    assert again.to_dict()["init_parameters"] == {
        "url": handbook_service.url,
        "knowledge_base": KB,
        "api_key": {"type": "env_var", "env_vars": ["ACME_KEY"], "strict": True},
        "top_k": 2,
        "mode": None,
        "filters": {"types": ["md"]},
        "max_per_document": 1,
        "min_relevance": 0.1,
    }
    inputs = {"retriever": {"query": LEAVE_QUESTION}, "prompt": {"question": LEAVE_QUESTION}}
    assert loaded.run(inputs)["prompt"]["prompt"] == pipeline.run(inputs)["prompt"]["prompt"]
    assert "[leave.md" in loaded.run(inputs)["prompt"]["prompt"]
    # a key given as a token never reaches a pipeline file
    with pytest.raises(ValueError, match="token"):
        _pipeline(ArchivistRetriever(handbook_service.url, KB, Secret.from_token(key))).dumps()
