"""RAGMiddleware end to end: real KBs (offline model, Qdrant Edge), a scripted chat model."""

from typing import Any

import pytest

from archivist.agent import Agent
from archivist.embedding import EmbeddingModelBase, LocalEmbeddingModel
from archivist.event import HintBlockEvent
from archivist.message import HintBlock, Msg, TextBlock, ToolResultBlock, ToolUseBlock
from archivist.middleware import RAGMiddleware
from archivist.model import ChatResponse, ScriptedChatModel
from archivist.rag import Chunk, KnowledgeBase
from archivist.rag.store.core.relevance import DEFAULT_MIN_RELEVANCE
from archivist.rag.store.qdrant import QdrantStore
from archivist.tool import Toolkit

PETS = [
    ("cats.pdf", {"page": 2}, "Cats sleep twelve to sixteen hours every day."),
    ("dogs.pptx", {"slide": 4}, "Dogs need a long walk twice a day."),
]
SPACE = [("rockets.md", {}, "Rockets reach orbit by burning fuel in stages.")]


@pytest.fixture(scope="module")
def embedder() -> EmbeddingModelBase:
    return LocalEmbeddingModel()


async def _make_kb(
    embedder: EmbeddingModelBase,
    store: QdrantStore,
    name: str,
    docs: list[tuple[str, dict[str, Any], str]],
    collection: str | None = None,
) -> KnowledgeBase:
    kb = KnowledgeBase(
        name=name,
        description=f"Facts about {name}.",
        embedding_model=embedder,
        vector_store=store,
        collection=collection or name,
    )
    for source, metadata, text in docs:
        chunk = Chunk(
            content=TextBlock(text=text),
            source=source,
            chunk_index=0,
            total_chunks=1,
            metadata=metadata,
        )
        await kb.insert_document([chunk], document_id=source)
    return kb


@pytest.fixture
async def knowledge(embedder: EmbeddingModelBase, store: QdrantStore) -> KnowledgeBase:
    return await _make_kb(embedder, store, "pets", PETS)


def _answer(text: str) -> ChatResponse:
    return ChatResponse(content=[TextBlock(text=text)])


def _hints(messages: list[Msg]) -> list[HintBlock]:
    return [b for m in messages for b in m.content if isinstance(b, HintBlock)]


def _hint_text(hint: HintBlock) -> str:
    assert isinstance(hint.hint, list)
    return "\n".join(b.text for b in hint.hint if isinstance(b, TextBlock))


async def test_seed_static_sample_places_and_removes_the_hint(knowledge: KnowledgeBase) -> None:
    chat_model = ScriptedChatModel([_answer("They sleep 12-16 hours [1]."), _answer("ok")])

    static_mw = RAGMiddleware(
        knowledges=[knowledge],  # 一个或多个 KnowledgeBase 句柄
        parameters=RAGMiddleware.Parameters(
            mode="static",
            top_k=3,
            emit_hint_event=False,
        ),
    )

    agent = Agent(
        name="static-agent",
        system_prompt="使用检索到的资料回答用户问题。",
        model=chat_model,
        toolkit=Toolkit(),
        middlewares=[static_mw],
    )

    question = Msg("user", "How long do cats sleep?", "user")
    reply = await agent.reply(question)
    assert reply.get_text_content() == "They sleep 12-16 hours [1]."
    sent = chat_model.calls[0].messages
    assert [m.role for m in sent] == ["system", "user", "user"]
    assert sent[1].id == question.id  # the hint comes right after the reply's input
    [hint] = _hints(sent)
    assert hint.source == "rag"
    text = _hint_text(hint)
    assert "[1] cats.pdf, page 2, chunk 0" in text
    assert "Cats sleep twelve to sixteen hours" in text
    assert text.index("cats.pdf") < text.index("dogs.pptx")  # min_relevance off by default
    # removed after the first reasoning step
    assert _hints(agent.memory.messages) == []
    assert [m.id for m in agent.memory.messages] == [question.id, reply.id]
    # the next reply searches again with its own input
    await agent.reply(Msg("user", "Do dogs need walks?", "user"))
    [second] = _hints(chat_model.calls[1].messages)
    assert _hint_text(second).index("dogs.pptx") < _hint_text(second).index("cats.pdf")


async def test_hint_only_before_the_first_step_and_persist_hint(knowledge: KnowledgeBase) -> None:
    async def tool() -> str:
        """A no-op tool to force a second reasoning step."""
        return "done"

    call = ToolUseBlock(id="c1", name="tool", input={})
    model = ScriptedChatModel([ChatResponse(content=[call]), _answer("final")])
    mw = RAGMiddleware(
        knowledges=[knowledge],
        parameters=RAGMiddleware.Parameters(mode="static", persist_hint=True, min_relevance=None),
    )
    agent = Agent(
        name="a", system_prompt="", model=model, toolkit=Toolkit([tool]), middlewares=[mw]
    )
    await agent.reply(Msg("user", "cats", "user"))
    assert len(_hints(model.calls[0].messages)) == 1
    assert len(_hints(model.calls[1].messages)) == 1  # persisted, not injected again
    assert len(_hints(agent.memory.messages)) == 1
    assert agent.memory.messages[1].content[0].type == "hint"


async def test_hint_block_event_fields(knowledge: KnowledgeBase) -> None:
    mw = RAGMiddleware(
        knowledges=[knowledge], parameters=RAGMiddleware.Parameters(mode="static", top_k=1)
    )
    agent = Agent(
        name="a", system_prompt="s", model=ScriptedChatModel([_answer("x")]), middlewares=[mw]
    )
    events = [e async for e in agent.reply_stream(Msg("user", "sleeping cats", "user"))]
    [event] = [e for e in events if isinstance(e, HintBlockEvent)]
    assert event.source == "rag"
    assert event.knowledge_bases == ["pets"]
    assert event.query == "sleeping cats"
    assert event.agent == "a" and event.reply_id
    assert event.metadata["citations"] == ["cats.pdf, page 2, chunk 0"]
    assert "Cats sleep" in _hint_text(event.hint)
    types = [e.type for e in events]
    assert types.index("hint") < types.index("reasoning_start")

    quiet = RAGMiddleware(
        knowledges=[knowledge],
        parameters=RAGMiddleware.Parameters(mode="static", emit_hint_event=False),
    )
    agent = Agent(
        name="a", system_prompt="s", model=ScriptedChatModel([_answer("x")]), middlewares=[quiet]
    )
    events = [e async for e in agent.reply_stream(Msg("user", "cats", "user"))]
    assert not any(isinstance(e, HintBlockEvent) for e in events)


async def test_seed_agentic_sample_tool_schema_and_call(
    embedder: EmbeddingModelBase, store: QdrantStore, knowledge: KnowledgeBase
) -> None:
    space = await _make_kb(embedder, store, "space", SPACE)
    agentic_mw = RAGMiddleware(
        knowledges=[knowledge, space],
        parameters=RAGMiddleware.Parameters(mode="agentic", top_k=3),
    )
    results: list[ToolResultBlock] = []

    def after_tool(messages: list[Msg], tools: list[dict[str, Any]] | None) -> ChatResponse:
        results.extend(b for b in messages[-1].content if isinstance(b, ToolResultBlock))
        return _answer("Rockets burn fuel in stages [1].")

    chat_model = ScriptedChatModel(
        [
            ChatResponse(
                content=[
                    ToolUseBlock(
                        id="call-1",
                        name="search_knowledge",
                        input={
                            "query": "how do rockets get to orbit",
                            "knowledge_bases": ["space"],
                        },
                    )
                ]
            ),
            after_tool,
        ]
    )

    # 注意：agentic 模式下需要手动把 search_knowledge 工具注入到 Toolkit
    toolkit = Toolkit(tools=await agentic_mw.list_tools())

    agent = Agent(
        name="agentic-agent",
        system_prompt="必要时调用 search_knowledge 工具查询资料。",
        model=chat_model,
        toolkit=toolkit,
        middlewares=[agentic_mw],
    )
    await agent.reply(Msg("user", "How do rockets reach orbit?", "user"))

    [schema] = chat_model.calls[0].tools or []
    function = schema["function"]
    assert function["name"] == "search_knowledge"
    assert "- pets: Facts about pets." in function["description"]
    assert "- space: Facts about space." in function["description"]
    properties = function["parameters"]["properties"]
    assert properties["knowledge_bases"]["items"]["enum"] == ["pets", "space"]
    assert function["parameters"]["required"] == ["query"]
    [result] = results
    assert not result.is_error
    text = "\n".join(b.text for b in result.output if isinstance(b, TextBlock))  # type: ignore[union-attr]
    assert "[1] rockets.md, chunk 0 (knowledge base: space" in text
    assert "cats.pdf" not in text and "dogs.pptx" not in text  # narrowed to "space"
    assert _hints(agent.memory.messages) == []  # agentic mode injects nothing by itself
    assert (
        await RAGMiddleware(
            knowledges=[knowledge], parameters=RAGMiddleware.Parameters(mode="static")
        ).list_tools()
        == []
    )


async def test_unknown_knowledge_base_is_an_error_result_not_a_crash(
    knowledge: KnowledgeBase,
) -> None:
    mw = RAGMiddleware(knowledge_bases=[knowledge])  # AgentScope 2.0.11's spelling
    bad = ToolUseBlock(
        id="c", name="search_knowledge", input={"query": "x", "knowledge_bases": ["wiki"]}
    )
    model = ScriptedChatModel([ChatResponse(content=[bad]), _answer("sorry")])
    agent = Agent(name="a", system_prompt="", model=model, toolkit=Toolkit(await mw.list_tools()))
    reply = await agent.reply(Msg("user", "q", "user"))
    assert reply.get_text_content() == "sorry"
    [result] = [b for b in model.calls[1].messages[-1].content if isinstance(b, ToolResultBlock)]
    assert result.is_error
    assert "wiki" in str(result.output) and "pets" in str(result.output)
    with pytest.raises(ValueError, match="unknown knowledge base"):
        await mw.retrieve(["x"], ["wiki"])


async def test_merging_across_kbs_dedupes_and_cuts_to_top_k(
    embedder: EmbeddingModelBase, store: QdrantStore, knowledge: KnowledgeBase
) -> None:
    # a second handle holding the same passages as "pets" plus one more
    mirror = await _make_kb(embedder, store, "mirror", [*PETS, *SPACE])
    every = {"min_relevance": None}  # a merge of whatever each KB ranks, relevant or not
    mw = RAGMiddleware(
        knowledges=[knowledge, mirror], parameters=RAGMiddleware.Parameters(top_k=2, **every)
    )
    retrieval = await mw.retrieve(["how long do cats sleep"])
    texts = [h.result.chunk.content.text for h in retrieval.hits]  # type: ignore[union-attr]
    assert len(texts) == 2 == len(set(texts))
    assert texts[0] == PETS[0][2]  # first in both lists, and the most relevant
    relevance = [h.result.relevance for h in retrieval.hits]
    assert relevance == sorted(relevance, reverse=True)  # type: ignore[type-var]
    assert retrieval.hits[0].fused_score == pytest.approx(2 / 61)  # found in both
    retrieval = await RAGMiddleware(
        knowledges=[knowledge, mirror], parameters=RAGMiddleware.Parameters(top_k=10, **every)
    ).retrieve(["cats"])
    assert len(retrieval.hits) == 3  # 2 + 3 passages, 2 of them duplicates


async def test_a_failing_kb_degrades_to_a_note(
    embedder: EmbeddingModelBase, knowledge: KnowledgeBase
) -> None:
    closed_store = QdrantStore(location=":memory:")  # never entered: every call fails
    broken = KnowledgeBase(
        name="broken", description="down", embedding_model=embedder,
        vector_store=closed_store, collection="c",
    )  # fmt: skip
    mw = RAGMiddleware(
        knowledges=[knowledge, broken],
        parameters=RAGMiddleware.Parameters(mode="static", min_relevance=None),
    )
    model = ScriptedChatModel([_answer("x")])
    agent = Agent(name="a", system_prompt="", model=model, middlewares=[mw])
    await agent.reply(Msg("user", "cats", "user"))
    text = _hint_text(_hints(model.calls[0].messages)[0])
    assert "Cats sleep" in text
    assert "knowledge base 'broken' could not be searched" in text


async def test_seed_combined_sample(knowledge: KnowledgeBase) -> None:
    search = ToolUseBlock(id="s", name="search_knowledge", input={"query": "dog walks"})
    chat_model = ScriptedChatModel([ChatResponse(content=[search]), _answer("Walk twice [2].")])

    # static 自动给首轮一个背景；agentic 让模型在需要时再补检索
    static_mw = RAGMiddleware(
        knowledges=[knowledge],
        parameters=RAGMiddleware.Parameters(mode="static", top_k=3),
    )
    agentic_mw = RAGMiddleware(
        knowledges=[knowledge],
        parameters=RAGMiddleware.Parameters(mode="agentic", top_k=3),
    )

    # 注意：agentic 模式下需要手动把 search_knowledge 工具注入到 Toolkit
    toolkit = Toolkit(tools=await agentic_mw.list_tools())

    agent = Agent(
        name="hybrid-agent",
        system_prompt="使用检索资料回答；必要时主动调用 search_knowledge 补充。",
        model=chat_model,
        toolkit=toolkit,
        middlewares=[static_mw, agentic_mw],
    )
    reply = await agent.reply(Msg("user", "Tell me about cats", "user"))
    assert reply.get_text_content() == "Walk twice [2]."
    assert len(_hints(chat_model.calls[0].messages)) == 1  # static hint on step 1
    assert _hints(chat_model.calls[1].messages) == []  # removed before step 2
    results = [
        b for b in chat_model.calls[1].messages[-1].content if isinstance(b, ToolResultBlock)
    ]
    assert "dogs.pptx, slide 4, chunk 0" in str(results[0].output)


def test_bad_construction() -> None:
    with pytest.raises(ValueError, match="at least one"):
        RAGMiddleware(knowledges=[])
    with pytest.raises(ValueError):
        RAGMiddleware.Parameters(top_k=0)
    with pytest.raises(ValueError):
        RAGMiddleware.Parameters(mode="hybrid")  # type: ignore[arg-type]


def test_citations_name_the_heading_path_and_sheet() -> None:
    from archivist.rag.document import Chunk
    from archivist.rag.knowledge.citation import citation

    def chunk(**metadata: object) -> Chunk:
        return Chunk(
            content=TextBlock(text="x"),
            source="guide.md",
            chunk_index=3,
            total_chunks=5,
            metadata=metadata,
        )

    assert citation(chunk(heading_path=["Guide", "Install", "Linux"])) == (
        "guide.md, Guide > Install > Linux, chunk 3"
    )
    assert citation(chunk(sheet="Q3", rows=[2, 101])) == "guide.md, sheet Q3, chunk 3"
    assert citation(chunk(page=2)) == "guide.md, page 2, chunk 3"
    assert citation(chunk(heading_path=[])) == "guide.md, chunk 3"


async def test_hint_template_wraps_the_static_hint(knowledge: KnowledgeBase) -> None:
    model = ScriptedChatModel([_answer("ok")])
    template = "<reminder>From the knowledge bases:\n{context}</reminder>"
    mw = RAGMiddleware(
        knowledges=[knowledge],
        parameters=RAGMiddleware.Parameters(mode="static", hint_template=template),
    )
    agent = Agent(name="a", system_prompt="", model=model, toolkit=Toolkit(), middlewares=[mw])
    await agent.reply(Msg("user", "How long do cats sleep?", "user"))
    [hint] = _hints(model.calls[0].messages)
    text = _hint_text(hint)
    assert text.startswith("<reminder>From the knowledge bases:\n")
    assert text.endswith("</reminder>")
    assert "Cats sleep twelve to sixteen hours" in text


@pytest.mark.parametrize("template", ["no placeholder", "{context} and {context}"])
def test_hint_template_needs_exactly_one_placeholder(template: str) -> None:
    with pytest.raises(ValueError, match="hint_template"):
        RAGMiddleware.Parameters(hint_template=template)


async def test_unknown_knowledge_base_result_tells_the_model_what_to_do(
    knowledge: KnowledgeBase,
) -> None:
    mw = RAGMiddleware(knowledge_bases=[knowledge])
    [tool] = await mw.list_tools()
    with pytest.raises(ValueError, match="leave knowledge_bases out") as caught:
        await tool(query="cats", knowledge_bases=["wiki"])
    assert "'pets'" in str(caught.value)


async def test_the_tool_returns_neighbouring_chunks_when_asked(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    manual = KnowledgeBase("manual", "A manual.", embedder, store, "manual")
    steps = [
        "Step one: unpack the parts.",
        "Step two: fit the wheels onto the frame with the long bolts.",
        "Step three: tighten every bolt with the hex key.",
    ]
    await manual.insert_document(
        [
            Chunk(content=TextBlock(text=t), source="bike.md", chunk_index=n, total_chunks=3)
            for n, t in enumerate(steps)
        ],
        document_id="bike",
    )
    middleware = RAGMiddleware(knowledges=[manual], parameters=RAGMiddleware.Parameters(top_k=1))
    [tool] = await middleware.list_tools()
    assert tool.parameters["properties"]["context"]["maximum"] == 10
    assert tool.parameters["required"] == ["query"]
    plain = await tool(query="fit the wheels onto the frame")
    alone = "\n".join(b.text for b in plain if isinstance(b, TextBlock))
    assert steps[1] in alone and steps[0] not in alone
    wide = await tool(query="fit the wheels onto the frame", context=1)
    text = "\n".join(b.text for b in wide if isinstance(b, TextBlock))
    assert all(step in text for step in steps)
    assert "bike.md, chunk 1 (with chunks 0-2)" in text
    with pytest.raises(ValueError, match="context"):
        await tool(query="wheels", context=99)


async def test_static_mode_inserts_nothing_when_no_passage_is_relevant(
    knowledge: KnowledgeBase,
) -> None:
    async def ask(parameters: RAGMiddleware.Parameters, question: str) -> int:
        model = ScriptedChatModel([_answer("ok")])
        agent = Agent(
            name="a",
            system_prompt="",
            model=model,
            middlewares=[RAGMiddleware(knowledges=[knowledge], parameters=parameters)],
        )
        await agent.reply(Msg("user", question, "user"))
        return len(_hints(model.calls[0].messages))

    assert RAGMiddleware.Parameters(mode="static").min_relevance is None  # as in AgentScope
    static = RAGMiddleware.Parameters(mode="static", min_relevance=DEFAULT_MIN_RELEVANCE)
    assert await ask(static, "How many hours a day do cats sleep?") == 1
    assert await ask(static, "What is the capital city of Peru?") == 0
    keep_all = RAGMiddleware.Parameters(mode="static", min_relevance=None)
    assert await ask(keep_all, "What is the capital city of Peru?") == 1


async def test_a_passage_in_two_files_is_shown_once_citing_both(
    embedder: EmbeddingModelBase, store: QdrantStore
) -> None:
    copies = [*PETS, ("cats-copy.pdf", {"page": 7}, PETS[0][2])]
    kb = await _make_kb(embedder, store, "pets", copies)
    middleware = RAGMiddleware(knowledges=[kb])
    retrieval = await middleware.retrieve(["How long do cats sleep?"])
    cats = [h for h in retrieval.hits if "Cats sleep" in h.result.chunk.content.text]  # type: ignore[union-attr]
    assert len(cats) == 1
    label = cats[0].citation()
    assert "cats.pdf, page 2, chunk 0" in label and "cats-copy.pdf, page 7, chunk 0" in label
    assert "also in" in label
