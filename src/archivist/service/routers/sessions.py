"""`/v1/sessions`: the caller's chat sessions and answers streamed over Server-Sent Events."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, HTTPException, Response, status
from fastapi.sse import EventSourceResponse

from archivist.service.chat import ChatRun, stream_events
from archivist.service.dependencies import ChatSession, State, Tenant, searched_kb
from archivist.service.schemas import (
    MessageCreate,
    MessageOut,
    Problem,
    SessionCreate,
    SessionDetail,
    SessionList,
    SessionOut,
)
from archivist.service.storage import sessions_store

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])

_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "no such session"}
}
NO_CHAT_MODEL = (
    "no chat model is configured: start the service with "
    "`archivist serve --chat-base-url URL --chat-model NAME` (key in ARCHIVIST_CHAT_API_KEY)"
)


@router.post("", status_code=status.HTTP_201_CREATED)
async def create_session(body: SessionCreate, tenant: Tenant, state: State) -> SessionOut:
    """Start an empty conversation."""
    session = await asyncio.to_thread(
        sessions_store.create_session, state.engine, tenant, body.title
    )
    return SessionOut.of(session)


@router.get("")
async def list_sessions(tenant: Tenant, state: State) -> SessionList:
    """The caller's sessions, most recently used first."""
    sessions = await asyncio.to_thread(sessions_store.list_sessions, state.engine, tenant)
    return SessionList(items=[SessionOut.of(s) for s in sessions])


@router.get("/{session_id}", responses=_NOT_FOUND)
async def get_session(session: ChatSession, state: State) -> SessionDetail:
    """The session with its messages, oldest first."""
    messages = await asyncio.to_thread(sessions_store.list_messages, state.engine, session.id)
    return SessionDetail(
        **SessionOut.of(session).model_dump(),
        messages=[
            MessageOut(role=m.role, content=m.content, citations=m.citations) for m in messages
        ],
    )


@router.delete("/{session_id}", status_code=status.HTTP_204_NO_CONTENT, responses=_NOT_FOUND)
async def delete_session(session: ChatSession, state: State) -> Response:
    """Delete the session and its history."""
    await asyncio.to_thread(sessions_store.delete_session, state.engine, session.id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/{session_id}/messages",
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "events `retrieval`, `delta`, `tool_call`, then `done` or `error`",
        },
        404: {"model": Problem, "description": "no such session or knowledge base"},
        409: {
            "model": Problem,
            "description": "no chat model is configured, or the session is already answering",
        },
    },
)
async def post_message(
    body: MessageCreate, session: ChatSession, tenant: Tenant, state: State
) -> EventSourceResponse:
    """Answer `content` from the named knowledge bases, streaming the answer as it comes.

    The question and its answer join the session's history once the answer is complete.
    """
    if state.chat_model is None:
        raise HTTPException(status.HTTP_409_CONFLICT, NO_CHAT_MODEL)
    names = list(dict.fromkeys(body.knowledge_bases))
    records = await asyncio.gather(*(searched_kb(state, tenant, name) for name in names))
    missing = [name for name, kb in zip(names, records, strict=True) if kb is None]
    if missing:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"no knowledge base {', '.join(map(repr, missing))}"
        )
    if session.id in state.answering:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            "this session is still answering a message; wait for it or close that request",
        )
    history = await asyncio.to_thread(sessions_store.list_messages, state.engine, session.id)
    run = ChatRun(
        engine=state.engine,
        settings=state.settings,
        model=state.chat_model,
        session_id=session.id,
        question=body.content,
        knowledge_bases=[await state.handle(kb) for kb in records if kb is not None],
        mode=body.mode,
        top_k=body.top_k,
        history=history,
    )
    return EventSourceResponse(
        stream_events(run, state.answering),
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
