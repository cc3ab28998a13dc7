"""asyncio locks per key, made on first use and held weakly, so unused keys never pile up.

The stores lock per (collection, document id) and per collection; the service locks per
document id (an upload being indexed and its deletion never interleave).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager


class KeyedLocks:
    """One asyncio.Lock per key; a key's lock lives only while someone holds or awaits it."""

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[Hashable, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    @asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        """Hold the lock of `key` for the body of the `async with`."""
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        async with lock:
            yield

    def __len__(self) -> int:
        """How many keys have a lock now (held or awaited)."""
        return len(self._locks)
