"""Middleware: code that hooks an agent's reply and its reasoning steps."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from archivist.middleware.context import ReplyContext
    from archivist.tool import ToolBase


class MiddlewareBase:
    """Override the hooks you need; each is awaited by the agent with the reply's context.

    Order within one `agent.reply(msg)`:

    1. the input Msg(s) are appended to `agent.memory`; `ReplyStart` is emitted;
    2. `on_reply_start(ctx)` — middlewares in list order;
    3. for each reasoning step (`ctx.iteration` = 0, 1, ...):
       a. `before_reasoning(ctx)` — list order;
       b. `ReasoningStart` is emitted; the model is called with the system prompt followed
          by the memory as it is now, so messages added in (a) are seen by this call;
       c. the assistant Msg is appended to memory (`ctx.response`); `ReasoningEnd` emitted;
       d. `after_reasoning(ctx)` — reverse list order; runs even when the model call
          failed (then `ctx.response` is None and `ctx.error` is set), so context added in
          (a) can always be taken out;
       e. if the Msg has tool calls: `ToolCall` events, the tools run concurrently,
          `ToolResult` events as each finishes, and one Msg with all results (in call
          order) is appended to memory; then the next step;
    4. `on_reply_end(ctx)` — reverse list order, `ctx.response` is the final Msg; also on
       failure or cancellation (`ctx.error` set, `ctx.response` None);
    5. `ReplyEnd` is emitted (or `Error`, and the exception propagates).

    A hook adds context with `ctx.memory.add(msg, after=ctx.input_msg)` (or `before=`, or
    appended by default), removes it with `ctx.memory.remove(msg)`, and streams events with
    `await ctx.emit(event)`. The first reasoning step of a reply is `ctx.iteration == 0`.
    """

    async def on_reply_start(self, ctx: ReplyContext) -> None:
        """Called once when a reply starts, after its input is in memory."""

    async def before_reasoning(self, ctx: ReplyContext) -> None:
        """Called before every model call of the reply."""

    async def after_reasoning(self, ctx: ReplyContext) -> None:
        """Called after every model call of the reply, before any tool runs."""

    async def on_reply_end(self, ctx: ReplyContext) -> None:
        """Called once when the reply ends, successfully or not."""

    async def list_tools(self) -> list[ToolBase]:
        """Tools this middleware offers; register them with `Toolkit(tools=...)`."""
        return []
