"""Chat-session operations: create, list, read, delete, and start an answer to a message."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from archivist.service.chat import ChatRun
from archivist.service.operations.errors import Conflict, NotFound
from archivist.service.operations.knowledge_bases import find_searched_kb
from archivist.service.state import ServiceState
from archivist.service.storage import sessions_store
from archivist.service.storage.sessions_store import MessageRecord, SessionRecord

NO_CHAT_MODEL = (
    "no chat model is configured: start the service with "
    "`archivist serve --chat-base-url URL --chat-model NAME` (key in ARCHIVIST_CHAT_API_KEY)"
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


async def start_answer(
    state: ServiceState,
    tenant: str,
    session: SessionRecord,
    question: str,
    knowledge_bases: Sequence[str],
    *,
    mode: str,
    top_k: int,
) -> ChatRun:
    """The run that answers `question` in `session` from the tenant's `knowledge_bases`.

    Conflict without a chat model or while the session is still answering; NotFound naming
    every knowledge base the tenant lacks.
    """
    if state.chat_model is None:
        raise Conflict(NO_CHAT_MODEL)
    names = list(dict.fromkeys(knowledge_bases))
    records = await asyncio.gather(*(find_searched_kb(state, tenant, name) for name in names))
    missing = [name for name, kb in zip(names, records, strict=True) if kb is None]
    if missing:
        raise NotFound(f"no knowledge base {', '.join(map(repr, missing))}")
    if session.id in state.answering:
        raise Conflict(
            "this session is still answering a message; wait for it or close that request"
        )
    history = await list_messages(state, session)
    return ChatRun(
        engine=state.engine,
        settings=state.settings,
        model=state.chat_model,
        session_id=session.id,
        question=question,
        knowledge_bases=[await state.handle(kb) for kb in records if kb is not None],
        mode=mode,
        top_k=top_k,
        history=history,
    )
