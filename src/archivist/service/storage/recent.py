"""Records found in a database in the last few seconds, kept in memory per database.

A lookup that every request repeats (the caller's key, the knowledge base it searches)
costs one database query per `ttl` instead of one per request. The process that changes a
record forgets it at once; other processes (replicas, the CLI beside the service) see the
change within `ttl`. Only records found are kept, so guessing cannot fill the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from cachetools import TTLCache
from sqlalchemy import Engine

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class RecentlyFound(Generic[K, V]):
    """`key -> value` of each database, each entry for at most `ttl` seconds; thread-safe."""

    def __init__(self, ttl: float, maxsize: int) -> None:
        self.ttl = ttl
        self.maxsize = maxsize
        self._caches: dict[str, TTLCache[K, V]] = {}
        self._lock = threading.Lock()

    def get(self, engine: Engine, key: K) -> V | None:
        """The value remembered for `key` in `engine`'s database, or None."""
        with self._lock:
            return self._cache_of(engine).get(key)

    def put(self, engine: Engine, key: K, value: V) -> None:
        """Remember `value` for `key` in `engine`'s database."""
        with self._lock:
            self._cache_of(engine)[key] = value

    def forget(self, engine: Engine, matches: Callable[[K, V], bool]) -> None:
        """Drop every entry of `engine`'s database for which `matches(key, value)`."""
        with self._lock:
            cache = self._cache_of(engine)
            for key, value in list(cache.items()):
                if matches(key, value):
                    del cache[key]

    def _cache_of(self, engine: Engine) -> TTLCache[K, V]:
        """The cache of `engine`'s database (every engine on it alike); callers hold the lock."""
        database = engine.url.render_as_string(hide_password=False)
        cache = self._caches.get(database)
        if cache is None:
            cache = self._caches[database] = TTLCache(maxsize=self.maxsize, ttl=self.ttl)
        return cache
