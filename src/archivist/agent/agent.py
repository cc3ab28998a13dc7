"""The agent: a reason-act loop over a chat model, a toolkit and middlewares."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, Sequence
from contextlib import suppress

from archivist.event import (
    Error,
    EventBase,
    ReasoningEnd,
    ReasoningStart,
    ReplyEnd,
    ReplyStart,
    TextDelta,
    ToolCall,
    ToolResult,
)
from archivist.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from archivist.message.memory import Memory
from archivist.middleware.base import MiddlewareBase
from archivist.middleware.context import EventSink, ReplyContext
from archivist.model import ChatDeltaAccumulator, ChatModelBase, ChatResponse, ChatUsage
from archivist.tool import Toolkit
from archivist.validation import check_positive_int

TOOL_RESULT_SENDER = "tool"


class Agent:
    """Answers messages by alternating model calls (reason) and tool calls (act).

    `reply(msg)` appends `msg` to `memory`, then calls the model with the system prompt,
    the memory and the toolkit's schemas; if the model asks for tools they run
    concurrently and their results (one Msg from "tool", role "user", results in call
    order) go back to the model, until it answers without tool calls. After `max_iters`
    steps that all asked for tools, one last call is made with `tool_choice="none"`;
    should the model still ask for tools, those calls are dropped and, without any text,
    the answer says the agent stopped. Memory persists across replies; replies of one agent
    run one at a time. `reply_stream(msg)` does the same, streaming the model, and yields
    events ending with ReplyEnd. A middleware's tools are not registered automatically:
    pass `await mw.list_tools()` to the Toolkit. See MiddlewareBase for the hook order.
    """

    def __init__(
        self,
        name: str,
        system_prompt: str,
        model: ChatModelBase,
        toolkit: Toolkit | None = None,
        middlewares: Sequence[MiddlewareBase] | None = None,
        max_iters: int = 10,
        memory: Memory | None = None,
    ) -> None:
        check_positive_int(max_iters, "max_iters")
        self.name = name
        self.system_prompt = system_prompt
        self.model = model
        self.toolkit = toolkit if toolkit is not None else Toolkit()
        self.middlewares = list(middlewares or [])
        self.max_iters = max_iters
        self.memory = memory if memory is not None else Memory()
        self._lock = asyncio.Lock()

    async def reply(self, msg: Msg | list[Msg] | None = None) -> Msg:
        """The agent's answer to `msg` (None: continue from memory as it is)."""
        return await self._reply(msg, _drop, stream=False)

    async def reply_stream(
        self, msg: Msg | list[Msg] | None = None
    ) -> AsyncGenerator[EventBase, None]:
        """The reply as events, ending with ReplyEnd; text arrives as TextDeltas while the
        model streams. On failure an Error event comes last and the exception is raised."""
        queue: asyncio.Queue[EventBase | None] = asyncio.Queue()

        async def run() -> None:
            try:
                await self._reply(msg, queue.put, stream=True)
            finally:
                queue.put_nowait(None)

        task = asyncio.create_task(run())
        try:
            while (event := await queue.get()) is not None:
                yield event
            await task
        finally:
            if not task.done():
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task

    async def _reply(self, msg: Msg | list[Msg] | None, sink: EventSink, *, stream: bool) -> Msg:
        inputs = [] if msg is None else [msg] if isinstance(msg, Msg) else list(msg)
        async with self._lock:
            ctx = ReplyContext(self, inputs, uuid.uuid4().hex, sink)
            failure: BaseException | None = None
            usage: ChatUsage | None = None
            try:
                self.memory.add(inputs)
                await ctx.emit(ReplyStart(input=inputs))
                for middleware in self.middlewares:
                    await middleware.on_reply_start(ctx)
                ctx.response, usage = await self._loop(ctx, stream=stream)
            except BaseException as exc:  # cancellation too: on_reply_end must still run
                failure = ctx.error = exc
                ctx.response = None
            try:
                for middleware in reversed(self.middlewares):
                    await middleware.on_reply_end(ctx)
            except Exception as exc:
                failure = failure or exc
            if failure is not None or ctx.response is None:
                error = failure or RuntimeError("reply ended without a message")
                if isinstance(error, Exception):
                    await ctx.emit(Error(error_type=type(error).__name__, message=str(error)))
                raise error
            await ctx.emit(ReplyEnd(msg=ctx.response, usage=usage))
            return ctx.response

    async def _loop(self, ctx: ReplyContext, *, stream: bool) -> tuple[Msg, ChatUsage | None]:
        usage: ChatUsage | None = None
        for iteration in range(self.max_iters + 1):
            ctx.iteration = iteration
            last = iteration == self.max_iters
            msg, response = await self._reason(
                ctx, stream=stream, tool_choice="none" if last else None
            )
            if response.usage is not None:
                usage = response.usage if usage is None else usage + response.usage
            calls = msg.get_blocks(ToolUseBlock)
            if not calls:
                return msg, usage
            await self._act(ctx, calls)
        raise AssertionError("unreachable: the last step never returns tool calls")

    async def _reason(
        self, ctx: ReplyContext, *, stream: bool, tool_choice: str | None
    ) -> tuple[Msg, ChatResponse]:
        for middleware in self.middlewares:
            await middleware.before_reasoning(ctx)
        ctx.response = None
        try:
            await ctx.emit(ReasoningStart(iteration=ctx.iteration))
            response = await self._call_model(ctx, stream=stream, tool_choice=tool_choice)
            content = list(response.content)
            if tool_choice == "none":
                content = [b for b in content if not isinstance(b, ToolUseBlock)]
                if not any(isinstance(b, TextBlock) and b.text for b in content):
                    content = [TextBlock(text=self._stopped_text())]
            msg = Msg(self.name, content, "assistant")
            self.memory.add(msg)
            ctx.response = msg
            await ctx.emit(ReasoningEnd(iteration=ctx.iteration, msg=msg, usage=response.usage))
            return msg, response
        except BaseException as exc:
            ctx.error = exc
            raise
        finally:
            for middleware in reversed(self.middlewares):
                await middleware.after_reasoning(ctx)

    async def _call_model(
        self, ctx: ReplyContext, *, stream: bool, tool_choice: str | None
    ) -> ChatResponse:
        messages = [Msg("system", self.system_prompt, "system")] if self.system_prompt else []
        messages.extend(self.memory.messages)
        tools = self.toolkit.schemas() or None
        if not stream:
            return await self.model(messages, tools, tool_choice)
        accumulator = ChatDeltaAccumulator()
        async for delta in await self.model(messages, tools, tool_choice, stream=True):
            if delta.text:
                await ctx.emit(TextDelta(iteration=ctx.iteration, delta=delta.text))
            accumulator.add(delta)
        return accumulator.response()

    async def _act(self, ctx: ReplyContext, calls: list[ToolUseBlock]) -> None:
        for call in calls:
            await ctx.emit(ToolCall(iteration=ctx.iteration, tool_call=call))

        async def run(call: ToolUseBlock) -> ToolResultBlock:
            result = await self.toolkit.call(call)
            await ctx.emit(ToolResult(iteration=ctx.iteration, result=result))
            return result

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(run(call)) for call in calls]
        results = [task.result() for task in tasks]
        self.memory.add(Msg(TOOL_RESULT_SENDER, list(results), "user"))

    def _stopped_text(self) -> str:
        return f"I stopped after {self.max_iters} reasoning steps without reaching a final answer."


async def _drop(event: EventBase) -> None:
    """Event sink of `reply()`: nobody listens."""
