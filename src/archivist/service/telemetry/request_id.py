"""The request id: taken from a sane incoming `X-Request-ID` or made up, held in a contextvar.

Every log record emitted while a request is handled (in its task, and in the threads and
tasks it starts) carries the id through `RequestIdFilter`, so one request's lines can be
found together and matched with what the client saw in the response header.
"""

from __future__ import annotations

import logging
import re
import uuid
from contextvars import ContextVar

HEADER = "x-request-id"
"""The request and response header (lower case, as ASGI carries names)."""

REQUEST_ID: ContextVar[str | None] = ContextVar("archivist_request_id", default=None)
"""The id of the request being handled in this context; None outside a request."""

_SANE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
"""What an incoming id may be: at most 128 characters that need no escaping in a log line."""


def request_id_for(incoming: str | None) -> str:
    """`incoming` when it is a sane id (bounded, safe characters), else a new random one."""
    if incoming is not None and _SANE.fullmatch(incoming):
        return incoming
    return uuid.uuid4().hex


class RequestIdFilter(logging.Filter):
    """Sets `record.request_id` to the current request's id (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        return True
