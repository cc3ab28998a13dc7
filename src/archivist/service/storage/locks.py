"""Per-document asyncio locks: an upload being indexed and its deletion never interleave."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class DocumentLocks:
    """One lock per document id, created on demand and dropped once nobody uses it."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}

    @asynccontextmanager
    async def hold(self, document_id: str) -> AsyncIterator[None]:
        """Hold `document_id`'s lock for the body of the `async with`."""
        lock = self._locks.setdefault(document_id, asyncio.Lock())
        self._users[document_id] = self._users.get(document_id, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[document_id] -= 1
            if not self._users[document_id]:
                del self._users[document_id]
                del self._locks[document_id]
