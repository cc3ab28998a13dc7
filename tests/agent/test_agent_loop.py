"""The agent's reason-act loop, its memory and events, driven by a ScriptedChatModel."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from archivist.agent import Agent, Memory
from archivist.event import (
    Error,
    EventBase,
    HintBlockEvent,
    ReasoningEnd,
    ReasoningStart,
    ReplyEnd,
    ReplyStart,
    TextDelta,
    ToolCall,
    ToolResult,
)
from archivist.message import HintBlock, Msg, TextBlock, ToolResultBlock, ToolUseBlock
from archivist.middleware import MiddlewareBase, ReplyContext
from archivist.model import ChatModelError, ChatResponse, ChatUsage, ScriptedChatModel
from archivist.tool import Toolkit


def says(text: str, *, tokens: int = 1) -> ChatResponse:
    return ChatResponse(
        content=[TextBlock(text=text)],
        usage=ChatUsage(input_tokens=tokens, output_tokens=tokens),
        stop_reason="stop",
    )


def calls(*uses: tuple[str, str, dict[str, Any]], text: str = "") -> ChatResponse:
    content: list[TextBlock | ToolUseBlock] = [TextBlock(text=text)] if text else []
    content += [ToolUseBlock(id=i, name=n, input=a) for i, n, a in uses]
    return ChatResponse(
        content=content, usage=ChatUsage(input_tokens=1, output_tokens=1), stop_reason="tool_calls"
    )


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: First.
        b: Second.
    """
    return a + b


def question(text: str = "What is 2 + 3?") -> Msg:
    return Msg("user", text, "user")


async def test_tool_call_then_result_then_final_answer() -> None:
    model = ScriptedChatModel([calls(("c1", "add", {"a": 2, "b": 3})), says("It is 5.")])
    agent = Agent("calc", "You add numbers.", model, toolkit=Toolkit([add]))

    answer = await agent.reply(question())

    assert answer.get_text_content() == "It is 5."
    assert (answer.name, answer.role) == ("calc", "assistant")
    first, second = model.calls
    assert first.tools == Toolkit([add]).schemas()
    assert [m.role for m in first.messages] == ["system", "user"]
    assert first.messages[0].get_text_content() == "You add numbers."
    result_msg = second.messages[-1]
    (result,) = result_msg.get_blocks(ToolResultBlock)
    assert (result.id, result.name, result.output, result.is_error) == ("c1", "add", "5", False)
    assert second.messages[-2].get_blocks(ToolUseBlock)[0].id == "c1"
    assert agent.memory.messages[-1] is answer


async def test_a_failing_tool_reaches_the_model_as_an_error_result() -> None:
    def broken() -> str:
        raise OSError("disk on fire")

    model = ScriptedChatModel([calls(("c1", "broken", {})), says("Sorry, the tool failed.")])
    agent = Agent("a", "", model, toolkit=Toolkit([broken]))

    answer = await agent.reply(question())

    assert answer.get_text_content() == "Sorry, the tool failed."
    (result,) = model.calls[1].messages[-1].get_blocks(ToolResultBlock)
    assert result.is_error and "disk on fire" in str(result.output)
    # No system prompt given: none is sent.
    assert model.calls[0].messages[0].role == "user"


async def test_parallel_tool_calls_run_concurrently_and_results_keep_call_order() -> None:
    started: list[str] = []
    both_started = asyncio.Event()
    finished: list[str] = []

    async def slow(tag: str) -> str:
        started.append(tag)
        if len(started) == 2:
            both_started.set()
        # Guard against a hang if calls ran one after another; the test fails instead.
        async with asyncio.timeout(10):
            await both_started.wait()
        if tag == "first":
            await asyncio.sleep(0)  # let "second" finish first
            await asyncio.sleep(0)
        finished.append(tag)
        return tag

    model = ScriptedChatModel(
        [calls(("c1", "slow", {"tag": "first"}), ("c2", "slow", {"tag": "second"})), says("done")]
    )
    agent = Agent("a", "", model, toolkit=Toolkit([slow]))

    await agent.reply(question())

    assert finished == ["second", "first"]
    results = model.calls[1].messages[-1].get_blocks(ToolResultBlock)
    assert [(r.id, r.output) for r in results] == [("c1", "first"), ("c2", "second")]


async def test_max_iters_ends_with_a_call_that_allows_no_tools() -> None:
    looping = [calls((f"c{i}", "add", {"a": i, "b": 1})) for i in range(3)]
    model = ScriptedChatModel([*looping[:2], says("Best guess: 3.")])
    agent = Agent("a", "", model, toolkit=Toolkit([add]), max_iters=2)

    answer = await agent.reply(question())

    assert answer.get_text_content() == "Best guess: 3."
    assert [c.tool_choice for c in model.calls] == [None, None, "none"]
    assert len(model.calls[2].messages[-1].get_blocks(ToolResultBlock)) == 1


async def test_tool_calls_in_the_last_allowed_step_are_dropped() -> None:
    model = ScriptedChatModel([calls(("c1", "add", {"a": 1, "b": 1}))] * 2)
    agent = Agent("a", "", model, toolkit=Toolkit([add]), max_iters=1)

    answer = await agent.reply(question())

    assert answer.get_blocks(ToolUseBlock) == []
    assert answer.get_text_content() == (
        "I stopped after 1 reasoning steps without reaching a final answer."
    )
    # Memory holds no tool call without its result.
    assert [len(m.get_blocks(ToolUseBlock)) for m in agent.memory] == [0, 1, 0, 0]


async def test_memory_persists_across_replies() -> None:
    model = ScriptedChatModel([says("Hi Ada."), says("Your name is Ada.")])
    agent = Agent("a", "Be nice.", model)

    await agent.reply(Msg("user", "I am Ada.", "user"))
    await agent.reply(Msg("user", "What is my name?", "user"))

    texts = [m.get_text_content() for m in model.calls[1].messages]
    assert texts == ["Be nice.", "I am Ada.", "Hi Ada.", "What is my name?"]
    assert len(agent.memory) == 4


async def test_reply_with_several_or_no_messages() -> None:
    model = ScriptedChatModel([says("one"), says("two")])
    agent = Agent("a", "", model, memory=Memory([Msg("user", "earlier", "user")]))

    await agent.reply([Msg("user", "x", "user"), Msg("user", "y", "user")])
    await agent.reply(None)

    assert [m.get_text_content() for m in model.calls[0].messages] == ["earlier", "x", "y"]
    assert [m.get_text_content() for m in model.calls[1].messages] == ["earlier", "x", "y", "one"]


class Recorder(MiddlewareBase):
    def __init__(self, tag: str, log: list[tuple[Any, ...]]) -> None:
        self.tag = tag
        self.log = log

    async def on_reply_start(self, ctx: ReplyContext) -> None:
        self.log.append((self.tag, "on_reply_start", ctx.iteration, len(ctx.memory)))

    async def before_reasoning(self, ctx: ReplyContext) -> None:
        self.log.append((self.tag, "before_reasoning", ctx.iteration, len(ctx.memory)))

    async def after_reasoning(self, ctx: ReplyContext) -> None:
        self.log.append((self.tag, "after_reasoning", ctx.iteration, len(ctx.memory)))

    async def on_reply_end(self, ctx: ReplyContext) -> None:
        text = ctx.response.get_text_content() if ctx.response else None
        self.log.append((self.tag, "on_reply_end", text))


async def test_middleware_hook_order() -> None:
    log: list[tuple[Any, ...]] = []
    model = ScriptedChatModel([calls(("c1", "add", {"a": 1, "b": 2})), says("3")])
    agent = Agent(
        "a", "", model, toolkit=Toolkit([add]), middlewares=[Recorder("A", log), Recorder("B", log)]
    )

    await agent.reply(question())

    # Memory sizes: input (1); + tool-call msg (2); + results (3); + answer (4).
    assert log == [
        ("A", "on_reply_start", 0, 1),
        ("B", "on_reply_start", 0, 1),
        ("A", "before_reasoning", 0, 1),
        ("B", "before_reasoning", 0, 1),
        ("B", "after_reasoning", 0, 2),
        ("A", "after_reasoning", 0, 2),
        ("A", "before_reasoning", 1, 3),
        ("B", "before_reasoning", 1, 3),
        ("B", "after_reasoning", 1, 4),
        ("A", "after_reasoning", 1, 4),
        ("B", "on_reply_end", "3"),
        ("A", "on_reply_end", "3"),
    ]


class HintOnFirstStep(MiddlewareBase):
    """What a static RAG middleware does: a hint after the input, for the first step only."""

    def __init__(self, persist: bool = False) -> None:
        self.persist = persist

    async def before_reasoning(self, ctx: ReplyContext) -> None:
        if ctx.iteration != 0 or ctx.input_msg is None:
            return
        hint = HintBlock(hint=f"Notes about: {ctx.input_msg.get_text_content()}", source="notes")
        msg = Msg("notes", [hint], "user")
        ctx.memory.add(msg, after=ctx.input_msg)
        ctx.state["hint"] = msg
        await ctx.emit(HintBlockEvent(hint=hint, source="notes", knowledge_bases=["kb"]))

    async def after_reasoning(self, ctx: ReplyContext) -> None:
        if ctx.iteration == 0 and not self.persist and "hint" in ctx.state:
            assert ctx.memory.remove(ctx.state["hint"])


def hint_texts(messages: list[Msg]) -> list[str]:
    return [
        str(b.hint) if isinstance(b, HintBlock) else m.get_text_content()
        for m in messages
        for b in m.content[:1]
    ]


async def test_middleware_adds_context_for_one_step_and_removes_it() -> None:
    model = ScriptedChatModel([calls(("c1", "add", {"a": 1, "b": 2})), says("3")])
    agent = Agent("a", "sys", model, toolkit=Toolkit([add]), middlewares=[HintOnFirstStep()])
    agent.memory.add(Msg("user", "older", "user"))

    await agent.reply(question("1+2?"))

    first, second = model.calls
    assert hint_texts(first.messages) == ["sys", "older", "1+2?", "Notes about: 1+2?"]
    assert not any(m.get_blocks(HintBlock) for m in second.messages)
    assert not any(m.get_blocks(HintBlock) for m in agent.memory)


async def test_persisted_context_stays_where_it_was_put() -> None:
    model = ScriptedChatModel([says("a"), says("b")])
    agent = Agent("a", "", model, middlewares=[HintOnFirstStep(persist=True)])

    await agent.reply(question("q1"))
    await agent.reply(question("q2"))

    assert hint_texts(agent.memory.messages) == [
        "q1",
        "Notes about: q1",
        "a",
        "q2",
        "Notes about: q2",
        "b",
    ]


async def test_context_is_removed_even_when_the_model_fails() -> None:
    model = ScriptedChatModel([])  # every call fails: no scripted turn
    log: list[tuple[Any, ...]] = []
    agent = Agent("a", "", model, middlewares=[HintOnFirstStep(), Recorder("R", log)])

    events: list[EventBase] = []
    with pytest.raises(ChatModelError, match="1th time"):
        async for event in agent.reply_stream(question("q")):
            events.append(event)

    assert not any(m.get_blocks(HintBlock) for m in agent.memory)
    assert [type(e) for e in events] == [ReplyStart, HintBlockEvent, ReasoningStart, Error]
    assert isinstance(events[-1], Error) and events[-1].error_type == "ChatModelError"
    assert log[-1] == ("R", "on_reply_end", None)


async def test_event_stream_order() -> None:
    model = ScriptedChatModel(
        [calls(("c1", "add", {"a": 2, "b": 3}), text="Adding."), says("The sum is 5.", tokens=2)]
    )
    agent = Agent("calc", "", model, toolkit=Toolkit([add]), middlewares=[HintOnFirstStep()])

    events = [e async for e in agent.reply_stream(question("2+3?"))]

    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "ReplyStart",
        "HintBlockEvent",
        "ReasoningStart",
        "TextDelta",
        "ReasoningEnd",
        "ToolCall",
        "ToolResult",
        "ReasoningStart",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "ReasoningEnd",
        "ReplyEnd",
    ]
    assert {e.agent for e in events} == {"calc"}
    assert len({e.reply_id for e in events}) == 1 and events[0].reply_id
    start, hint, end = events[0], events[1], events[-1]
    assert isinstance(start, ReplyStart) and start.input[0].get_text_content() == "2+3?"
    assert isinstance(hint, HintBlockEvent) and hint.knowledge_bases == ["kb"]
    assert isinstance(end, ReplyEnd) and end.msg.get_text_content() == "The sum is 5."
    assert end.usage == ChatUsage(input_tokens=3, output_tokens=3)
    second_step = [e.delta for e in events if isinstance(e, TextDelta) and e.iteration == 1]
    assert "".join(second_step) == "The sum is 5."
    tool_call = next(e for e in events if isinstance(e, ToolCall))
    tool_result = next(e for e in events if isinstance(e, ToolResult))
    assert (tool_call.tool_call.id, tool_result.result.id, tool_result.result.output) == (
        "c1",
        "c1",
        "5",
    )
    assert [e.iteration for e in events if isinstance(e, ReasoningStart | ReasoningEnd)] == [
        0,
        0,
        1,
        1,
    ]
    assert all(call.stream for call in model.calls)
    assert agent.memory.messages[-1].get_text_content() == "The sum is 5."


async def test_reply_and_reply_stream_leave_the_same_memory() -> None:
    def script() -> ScriptedChatModel:
        return ScriptedChatModel([calls(("c1", "add", {"a": 2, "b": 3})), says("5")])

    plain = Agent("a", "", script(), toolkit=Toolkit([add]))
    streamed = Agent("a", "", script(), toolkit=Toolkit([add]))
    await plain.reply(question())
    _ = [e async for e in streamed.reply_stream(question())]

    def shape(agent: Agent) -> list[list[tuple[str, Any]]]:
        return [
            [
                (b.type, b.model_dump(exclude={"id", "created_at"}))
                for b in m.content
                if b.type != "tool_use"
            ]
            + [(b.type, (b.id, b.name, b.input)) for b in m.get_blocks(ToolUseBlock)]
            for m in agent.memory
        ]

    assert shape(plain) == shape(streamed)


async def test_scripted_turns_may_be_functions_of_the_call() -> None:
    seen: list[int] = []

    async def answer(messages: list[Msg], tools: list[dict[str, Any]] | None) -> ChatResponse:
        seen.append(len(messages))
        return says(f"{len(tools or [])} tool(s), last said: {messages[-1].get_text_content()}")

    agent = Agent("a", "", ScriptedChatModel([answer]), toolkit=Toolkit([add]))
    reply = await agent.reply(question("hello"))
    assert reply.get_text_content() == "1 tool(s), last said: hello"
    assert seen == [1]


async def test_seed_static_sample_shape_runs() -> None:
    """The seed's static sample: Agent(name=..., toolkit=Toolkit(), middlewares=[mw])."""
    static_mw = HintOnFirstStep()
    agent = Agent(
        name="static-agent",
        system_prompt="使用检索到的资料回答用户问题。",
        model=ScriptedChatModel([says("好的。")]),
        toolkit=Toolkit(),
        middlewares=[static_mw],
    )
    reply = await agent.reply(Msg("user", "问题", "user"))
    assert reply.get_text_content() == "好的。"


async def test_abandoning_a_stream_cancels_the_reply_and_frees_the_agent() -> None:
    entered = asyncio.Event()

    async def never_answers(
        messages: list[Msg], tools: list[dict[str, Any]] | None
    ) -> ChatResponse:
        entered.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    log: list[tuple[Any, ...]] = []
    agent = Agent(
        "a",
        "",
        ScriptedChatModel([never_answers, says("second")]),
        middlewares=[HintOnFirstStep(), Recorder("R", log)],
    )

    stream = agent.reply_stream(question("q1"))
    assert isinstance(await anext(stream), ReplyStart)
    async with asyncio.timeout(10):  # guard: fail rather than hang
        await entered.wait()
    await stream.aclose()
    assert log[-2:] == [("R", "after_reasoning", 0, 2), ("R", "on_reply_end", None)]
    async with asyncio.timeout(10):
        answer = await agent.reply(question("q2"))

    assert answer.get_text_content() == "second"
    assert hint_texts(agent.memory.messages) == ["q1", "q2", "second"]
