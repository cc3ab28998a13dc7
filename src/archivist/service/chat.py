"""Answers over HTTP: the package's `Agent` with `RAGMiddleware` over a tenant's knowledge
bases, streamed as events (the sessions router writes them as Server-Sent Events).

Events: `retrieval` (`{"hits", "knowledge_bases", "errors"}`, hits shaped as in search),
`delta` (`{"text"}`), `tool_call` (`{"id", "name", "input"}`), then either `done`
(`{"content", "citations"}`, the exchange is stored) or `error` (`{"detail", "status"}`,
nothing is stored). A failing chat server ends the stream with `error`; the whole run is
bounded by `chat_run_seconds`; when the client goes away the run is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any, NamedTuple

import httpx
from sqlalchemy import Engine

from archivist.agent import Agent
from archivist.event import ReplyEnd, TextDelta, ToolCall
from archivist.message import Msg
from archivist.message.memory import Memory
from archivist.middleware import RAGMiddleware
from archivist.middleware.retrieval import Retrieval
from archivist.model import ChatModelBase, OpenAIChatModel
from archivist.model.errors import (
    ChatModelAPIError,
    ChatModelConnectionError,
    ChatModelError,
)
from archivist.rag import KnowledgeBase
from archivist.service.schemas import Hit
from archivist.service.settings import ServiceSettings
from archivist.service.storage.sessions_store import Citation, MessageRecord, add_exchange
from archivist.tool import Toolkit

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You answer questions from the user's own documents. Use only the retrieved passages; "
    "cite each fact with the passage's [number] and source (file, page or slide). If the "
    "passages do not contain the answer, say so."
)
HISTORY_TURNS = 20
"""Earlier messages of the session the model sees (the newest ones)."""
MAX_ITERS = 4
"""Reasoning steps of one answer in agentic mode before it must answer."""
KEEPALIVE_SECONDS = 15.0
"""Quiet seconds after which `stream_events` yields None, for the stream's keep-alive."""

Emit = Callable[[str, dict[str, Any]], None]


class ChatEvent(NamedTuple):
    """One event of a run: its name (`delta`, `done`, ...) and its data as JSON text."""

    event: str
    data: str


def configured_chat_model(settings: ServiceSettings) -> ChatModelBase | None:
    """The chat model `settings` names, or None when no chat server is configured."""
    if not settings.chat_base_url:
        return None
    return OpenAIChatModel(
        settings.chat_model or "default",
        base_url=settings.chat_base_url.rstrip("/"),
        api_key=settings.chat_api_key,
        timeout=settings.chat_timeout,
        max_retries=1,
        retry_max_delay=5.0,
        generate_kwargs=(
            {"max_tokens": settings.chat_max_tokens} if settings.chat_max_tokens else None
        ),
    )


class ChatRun:
    """One answer in a session: runs the agent and reports what happens through `emit`."""

    def __init__(
        self,
        *,
        engine: Engine,
        settings: ServiceSettings,
        model: ChatModelBase,
        session_id: str,
        question: str,
        knowledge_bases: Sequence[KnowledgeBase],
        mode: str,
        top_k: int,
        history: Sequence[MessageRecord],
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.model = model
        self.session_id = session_id
        self.question = question
        self.knowledge_bases = list(knowledge_bases)
        self.mode = mode
        self.top_k = top_k
        self.history = list(history)[-HISTORY_TURNS:]
        self.citations: dict[tuple[str, str, int], Citation] = {}

    async def _agent(self, emit: Emit) -> Agent:
        def report(retrieval: Retrieval) -> None:
            hits: list[dict[str, Any]] = []
            for number, hit in enumerate(retrieval.hits, start=1):
                out = Hit.of(hit.result)
                hits.append({**out.model_dump(), "knowledge_base": hit.knowledge_base})
                key = (hit.knowledge_base, out.document_id, out.chunk_index)
                self.citations.setdefault(
                    key,
                    Citation(
                        number=number,
                        knowledge_base=hit.knowledge_base,
                        document_id=out.document_id,
                        filename=out.filename,
                        chunk_index=out.chunk_index,
                        citation=out.citation,
                    ),
                )
            emit(
                "retrieval",
                {"hits": hits, "knowledge_bases": retrieval.searched, "errors": retrieval.errors},
            )

        modes = ["static", "agentic"] if self.mode == "both" else [self.mode]
        middlewares = [
            RAGMiddleware(
                self.knowledge_bases,
                RAGMiddleware.Parameters(mode=mode, top_k=self.top_k),
                on_retrieval=report,
            )
            for mode in modes
        ]
        tools = [tool for mw in middlewares for tool in await mw.list_tools()]
        memory = Memory(
            Msg("user", m.content, "user")
            if m.role == "user"
            else Msg("archivist", m.content, "assistant")
            for m in self.history
        )
        return Agent(
            name="archivist",
            system_prompt=SYSTEM_PROMPT,
            model=self.model,
            toolkit=Toolkit(tools=tools),
            middlewares=middlewares,
            max_iters=MAX_ITERS,
            memory=memory,
        )

    async def run(self, emit: Emit) -> None:
        """Answer the question; every outcome ends with one `done` or one `error` event."""
        try:
            async with asyncio.timeout(self.settings.chat_run_seconds):
                agent = await self._agent(emit)
                answer = ""
                capped = AnswerCap(self.settings.chat_max_answer_bytes)
                events = agent.reply_stream(Msg("user", self.question, "user"))
                async with contextlib.aclosing(events):  # leaving closes the model's stream
                    async for event in events:
                        if isinstance(event, TextDelta) and event.delta:
                            kept = capped.take(event.delta)
                            if kept:
                                emit("delta", {"text": kept})
                            if capped.full:
                                break
                        elif isinstance(event, ToolCall):
                            call = event.tool_call
                            emit("tool_call", {"id": call.id, "name": call.name,
                                               "input": call.input})  # fmt: skip
                        elif isinstance(event, ReplyEnd):
                            answer = event.msg.get_text_content()
            if capped.full:
                await self._keep(capped.text)
                emit("error", _error(f"the answer passed the {capped.limit:,}-byte limit and "
                                     "was cut there", 502))  # fmt: skip
                return
        except TimeoutError:
            emit("error", _error(f"no answer within {self.settings.chat_run_seconds:g} s", 504))
            return
        except ChatModelAPIError as exc:
            # The chat server's words may quote the conversation: the log keeps the status.
            logger.warning("chat model answered %s in session %s", exc.status_code, self.session_id)
            logger.debug("chat model error in session %s: %s", self.session_id, exc)
            emit("error", _error(f"the chat model answered {exc.status_code}: {exc.message}",
                                 exc.status_code))  # fmt: skip
            return
        except httpx.TimeoutException as exc:
            logger.warning("chat model too slow in session %s: %r", self.session_id, exc)
            emit("error", _error("the chat model server stopped sending its answer in time", 504))
            return
        except (ChatModelConnectionError, httpx.TransportError) as exc:
            logger.warning("chat model unreachable in session %s: %s", self.session_id, exc)
            emit("error", _error("the chat model server could not be reached or stopped "
                                 "answering", 502))  # fmt: skip
            return
        except ChatModelError as exc:
            # The error quotes what the model sent, which may quote the tenant's documents.
            logger.warning("bad chat model answer in session %s", self.session_id)
            logger.debug("bad chat model answer in session %s: %s", self.session_id, exc)
            emit("error", _error(f"the chat model's answer was broken: {exc}", 502))
            return
        except Exception as exc:
            logger.exception("answer failed in session %s", self.session_id)
            emit("error", _error(f"the answer failed: {type(exc).__name__}", 500))
            return
        citations = await self._keep(answer)
        emit("done", {"content": answer, "citations": [c.model_dump() for c in citations]})

    async def _keep(self, answer: str) -> list[Citation]:
        """Add the question and `answer` to the session's history; the answer's citations."""
        citations = sorted(self.citations.values(), key=lambda c: c.number)
        await asyncio.to_thread(
            add_exchange, self.engine, self.session_id, self.question, answer, citations
        )
        return citations


class AnswerCap:
    """The streamed text of an answer up to `limit` UTF-8 bytes; `full` once it was cut."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.full = False
        self._parts: list[str] = []
        self._size = 0

    @property
    def text(self) -> str:
        """The text taken so far."""
        return "".join(self._parts)

    def take(self, delta: str) -> str:
        """The part of `delta` within the limit (cut at a character boundary)."""
        data = delta.encode()
        room = self.limit - self._size
        if len(data) > room:
            self.full = True
            delta = data[:room].decode(errors="ignore")
            data = delta.encode()
        self._size += len(data)
        self._parts.append(delta)
        return delta


def _error(detail: str, status: int) -> dict[str, Any]:
    return {"detail": detail, "status": status}


async def stream_events(
    run: ChatRun, release: Callable[[], None] | None = None
) -> AsyncGenerator[ChatEvent | None, None]:
    """The run's events as they come, and None after each `KEEPALIVE_SECONDS` the model is
    quiet (for the transport's keep-alive). Closing the generator (the client went away)
    cancels the run. `release` (blocking: it runs in a thread) is called once the run has
    ended, however it ended: it ends the session's answering mark."""
    queue: asyncio.Queue[ChatEvent | None] = asyncio.Queue()

    def emit(event: str, data: dict[str, Any]) -> None:
        queue.put_nowait(ChatEvent(event, json.dumps(data, ensure_ascii=False)))

    async def execute() -> None:
        try:
            await run.run(emit)
        finally:
            queue.put_nowait(None)
            if release is not None:
                # Shielded: a run cancelled while it ends still releases its session.
                await asyncio.shield(asyncio.to_thread(release))

    task = asyncio.create_task(execute())
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
            except TimeoutError:
                yield None
                continue
            if item is None:
                break
            yield item
        await task
    finally:
        if not task.done():
            # Cancel once and let the run clean up (close the chat server's connection) on
            # its own: the response's cancel scope keeps cancelling whatever awaits here, and
            # a second cancellation inside httpx's close would leave the connection open.
            task.cancel()
            _cleaning.add(task)
            task.add_done_callback(_cleaning.discard)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(task)


_cleaning: set[asyncio.Task[None]] = set()
"""Cancelled runs still closing; referenced so they are not collected half-way."""
