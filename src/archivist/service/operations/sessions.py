"""Chat-session operations: create, list, read, delete, and start an answer to a message."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from archivist.service.chat import ChatRun
from archivist.service.errors import Conflict, NotFound
from archivist.service.operations.knowledge_bases import find_searched_kb
from archivist.service.state import ServiceState
from archivist.service.storage import sessions_store
from archivist.service.storage.sessions_store import MessageRecord, SessionRecord

NO_CHAT_MODEL = (
    "no chat model is configured: start the service with "
    "`archivist serve --chat-base-url URL --chat-model NAME` (key in ARCHIVIST_CHAT_API_KEY); "
    "`archivist chat-server` serves a small one on this machine, offline "
    "(--chat-base-url http://127.0.0.1:8080/v1 --chat-model gemma-3-270m)"
)


async def create_session(state: ServiceState, tenant: str, title: str = "") -> SessionRecord:
    """Start an empty conversation for the tenant."""
    return await asyncio.to_thread(sessions_store.create_session, state.engine, tenant, title)


async def list_sessions(state: ServiceState, tenant: str) -> list[SessionRecord]:
    """The tenant's sessions, most recently used first."""
    return await asyncio.to_thread(sessions_store.list_sessions, state.engine, tenant)


async def get_session(state: ServiceState, tenant: str, session_id: str) -> SessionRecord:
    """The tenant's session `session_id`; NotFound otherwise (also for another tenant's)."""
    session = await asyncio.to_thread(sessions_store.get_session, state.engine, tenant, session_id)
    if session is None:
        raise NotFound(f"no session {session_id!r}")
    return session


async def list_messages(state: ServiceState, session: SessionRecord) -> list[MessageRecord]:
    """The session's messages, oldest first."""
    return await asyncio.to_thread(sessions_store.list_messages, state.engine, session.id)


async def delete_session(state: ServiceState, session: SessionRecord) -> None:
    """Delete the session and its history."""
    await asyncio.to_thread(sessions_store.delete_session, state.engine, session.id)


ANSWER_MARK_SLACK_SECONDS = 60.0
"""An answering mark older than the longest run by this much was left by a replica that
died mid-answer, and is taken over."""


@dataclass(frozen=True)
class AnswerStart:
    """A run that may start, and how to end the session's answering mark once it has run."""

    run: ChatRun
    release: Callable[[], None]


async def start_answer(
    state: ServiceState,
    tenant: str,
    session: SessionRecord,
    question: str,
    knowledge_bases: Sequence[str],
    *,
    mode: str,
    top_k: int,
) -> AnswerStart:
    """The run that answers `question` in `session` from the tenant's `knowledge_bases`.

    The session is marked answering in the database (Conflict while it already is, on any
    replica) until `release` is called; Conflict without a chat model; NotFound naming every
    knowledge base the tenant lacks.
    """
    if state.chat_model is None:
        raise Conflict(NO_CHAT_MODEL)
    names = list(dict.fromkeys(knowledge_bases))
    records = await asyncio.gather(*(find_searched_kb(state, tenant, name) for name in names))
    missing = [name for name, kb in zip(names, records, strict=True) if kb is None]
    if missing:
        raise NotFound(f"no knowledge base {', '.join(map(repr, missing))}")
    stale_after = state.settings.chat_run_seconds + ANSWER_MARK_SLACK_SECONDS
    token = await asyncio.to_thread(
        sessions_store.claim_answer, state.engine, session.id, stale_after
    )
    if token is None:
        raise Conflict(
            "this session is still answering a message; wait for it or close that request"
        )
    release = functools.partial(sessions_store.release_answer, state.engine, session.id, token)
    try:
        history = await list_messages(state, session)
        handles = [await state.handle(kb) for kb in records if kb is not None]
    except BaseException:
        await asyncio.shield(asyncio.to_thread(release))
        raise
    run = ChatRun(
        engine=state.engine,
        settings=state.settings,
        model=state.chat_model,
        session_id=session.id,
        question=question,
        knowledge_bases=handles,
        mode=mode,
        top_k=top_k,
        history=history,
    )
    return AnswerStart(run, release)
