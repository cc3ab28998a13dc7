"""`/v1/sessions`: the caller's chat sessions and answers streamed over Server-Sent Events."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Any

from fastapi import APIRouter, Response, status
from fastapi.sse import KEEPALIVE_COMMENT, EventSourceResponse, format_sse_event

from archivist.service.chat import ChatEvent, stream_events
from archivist.service.dependencies import ChatSession, State, Tenant
from archivist.service.operations import sessions as operations
from archivist.service.schemas import (
    MessageCreate,
    MessageOut,
    Problem,
    SessionCreate,
    SessionDetail,
    SessionList,
    SessionOut,
)

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])

_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "no such session"}
}


@router.post("", status_code=status.HTTP_201_CREATED)
async def create_session(body: SessionCreate, tenant: Tenant, state: State) -> SessionOut:
    """Start an empty conversation."""
    return SessionOut.of(await operations.create_session(state, tenant, body.title))


@router.get("")
async def list_sessions(tenant: Tenant, state: State) -> SessionList:
    """The caller's sessions, most recently used first."""
    sessions = await operations.list_sessions(state, tenant)
    return SessionList(items=[SessionOut.of(s) for s in sessions])


@router.get("/{session_id}", responses=_NOT_FOUND)
async def get_session(session: ChatSession, state: State) -> SessionDetail:
    """The session with its messages, oldest first."""
    messages = await operations.list_messages(state, session)
    return SessionDetail(
        **SessionOut.of(session).model_dump(),
        messages=[
            MessageOut(role=m.role, content=m.content, citations=m.citations) for m in messages
        ],
    )


@router.delete("/{session_id}", status_code=status.HTTP_204_NO_CONTENT, responses=_NOT_FOUND)
async def delete_session(session: ChatSession, state: State) -> Response:
    """Delete the session and its history."""
    await operations.delete_session(state, session)
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
    start = await operations.start_answer(
        state,
        tenant,
        session,
        body.content,
        body.knowledge_bases,
        mode=body.mode,
        top_k=body.top_k,
    )
    return EventSourceResponse(
        sse_wire(stream_events(start.run, start.release)),
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def sse_wire(
    events: AsyncGenerator[ChatEvent | None, None],
) -> AsyncGenerator[bytes, None]:
    """A run's `events` in SSE wire format, a quiet spell (None) as a keep-alive comment.
    Closing this closes `events` at once, which cancels the run (the client went away)."""
    async with contextlib.aclosing(events):
        async for item in events:
            if item is None:
                yield KEEPALIVE_COMMENT
            else:
                yield format_sse_event(event=item.event, data_str=item.data)
