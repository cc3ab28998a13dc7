"""Chat sessions and their messages, always looked up within one tenant."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Engine, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from archivist.service.storage.database import (
    chat_answering,
    chat_messages,
    chat_sessions,
    reading,
    writing,
)

ChatRole = Literal["user", "assistant"]


class Citation(BaseModel):
    """A chunk an answer drew on: enough to fetch it again (`GET .../chunks`)."""

    model_config = ConfigDict(extra="forbid")

    number: int
    """The passage's [number] as the model saw it."""
    knowledge_base: str
    document_id: str
    filename: str
    chunk_index: int
    citation: str


class SessionRecord(BaseModel):
    """A tenant's conversation."""

    model_config = ConfigDict(extra="forbid")

    id: str
    tenant: str
    title: str
    created_at: float
    updated_at: float


class MessageRecord(BaseModel):
    """One turn of a conversation, with the chunks an answer cited."""

    model_config = ConfigDict(extra="forbid")

    role: ChatRole
    content: str
    citations: list[Citation]
    created_at: float


def create_session(engine: Engine, tenant: str, title: str) -> SessionRecord:
    """Record a new, empty session."""
    now = time.time()
    record = SessionRecord(
        id=uuid.uuid4().hex, tenant=tenant, title=title, created_at=now, updated_at=now
    )
    with writing(engine) as db:
        db.execute(insert(chat_sessions).values(**record.model_dump()))
    return record


def list_sessions(engine: Engine, tenant: str) -> list[SessionRecord]:
    """The tenant's sessions, most recently used first."""
    with reading(engine) as db:
        rows = db.execute(
            select(chat_sessions)
            .where(chat_sessions.c.tenant == tenant)
            .order_by(chat_sessions.c.updated_at.desc(), chat_sessions.c.id)
        ).all()
    return [SessionRecord.model_validate(row._asdict()) for row in rows]


def get_session(engine: Engine, tenant: str, session_id: str) -> SessionRecord | None:
    """Session `session_id` of `tenant`, or None (also when another tenant owns it)."""
    with reading(engine) as db:
        row = db.execute(
            select(chat_sessions).where(
                chat_sessions.c.tenant == tenant, chat_sessions.c.id == session_id
            )
        ).one_or_none()
    return None if row is None else SessionRecord.model_validate(row._asdict())


def delete_session(engine: Engine, session_id: str) -> None:
    """Remove a session and its messages."""
    with writing(engine) as db:
        db.execute(delete(chat_messages).where(chat_messages.c.session_id == session_id))
        db.execute(delete(chat_answering).where(chat_answering.c.session_id == session_id))
        db.execute(delete(chat_sessions).where(chat_sessions.c.id == session_id))


def claim_answer(engine: Engine, session_id: str, stale_after: float) -> str | None:
    """Mark `session_id` as answering and return the mark's token; None when it already is.
    A mark older than `stale_after` seconds (its replica died mid-answer) is taken over.
    The mark is a row keyed by the session, so two claims on any replicas cannot both win."""
    token = uuid.uuid4().hex
    now = time.time()
    with writing(engine) as db:
        db.execute(
            delete(chat_answering).where(
                chat_answering.c.session_id == session_id,
                chat_answering.c.started_at < now - stale_after,
            )
        )
        taken = db.execute(
            select(chat_answering.c.token).where(chat_answering.c.session_id == session_id)
        ).one_or_none()
        if taken is not None:
            return None
        try:
            with db.begin_nested():
                db.execute(
                    insert(chat_answering).values(
                        session_id=session_id, token=token, started_at=now
                    )
                )
        except IntegrityError:  # another replica's claim won meanwhile (PostgreSQL)
            return None
    return token


def release_answer(engine: Engine, session_id: str, token: str) -> None:
    """End the answering mark `token` of `session_id` (a taken-over one stays)."""
    with writing(engine) as db:
        db.execute(
            delete(chat_answering).where(
                chat_answering.c.session_id == session_id, chat_answering.c.token == token
            )
        )


def list_messages(engine: Engine, session_id: str) -> list[MessageRecord]:
    """A session's messages, oldest first."""
    with reading(engine) as db:
        rows = db.execute(
            select(chat_messages)
            .where(chat_messages.c.session_id == session_id)
            .order_by(chat_messages.c.id)
        ).all()
    return [
        MessageRecord(
            role=row.role,
            content=row.content,
            citations=[Citation.model_validate(c) for c in json.loads(row.citations)],
            created_at=row.created_at,
        )
        for row in rows
    ]


def add_exchange(
    engine: Engine, session_id: str, question: str, answer: str, citations: list[Citation]
) -> None:
    """Append a question and its answer in one transaction, so the history never holds a
    question without its answer (chat templates that need alternating roles stay valid)."""
    now = time.time()
    rows: list[dict[str, Any]] = [
        {"role": "user", "content": question, "citations": "[]"},
        {
            "role": "assistant",
            "content": answer,
            "citations": json.dumps([c.model_dump() for c in citations], ensure_ascii=False),
        },
    ]
    with writing(engine) as db:
        for row in rows:
            db.execute(insert(chat_messages).values(session_id=session_id, created_at=now, **row))
        db.execute(
            update(chat_sessions).where(chat_sessions.c.id == session_id).values(updated_at=now)
        )
