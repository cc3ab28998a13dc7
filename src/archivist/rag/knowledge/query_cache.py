"""A small in-memory cache of recent search answers, per knowledge base and scope.

An entry is filed under the store, the collection and the handle's metadata filter (so one
tenant's answers are never another's), and under the exact request. Any write through a
`KnowledgeBase` on that store and collection (insert, delete, repair) calls `written`, which
moves the collection to a new generation: every answer cached before it is dead at once, for
every scope of that collection. Entries also expire after `ttl` seconds, which bounds how
stale an answer can be after a write made by another process.
"""

from __future__ import annotations

import functools
import itertools
import json
import threading
import weakref
from collections.abc import Callable, Coroutine, Hashable
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar

from cachetools import TTLCache

from archivist.errors import InvalidArgumentError

V = TypeVar("V")
P = ParamSpec("P")
R = TypeVar("R")

# store -> collection -> generation: bumped on every write through a KnowledgeBase.
_generations: weakref.WeakKeyDictionary[object, dict[str, int]] = weakref.WeakKeyDictionary()
# store -> a number no other store of this process gets (an id() can be reused).
_serials: weakref.WeakKeyDictionary[object, int] = weakref.WeakKeyDictionary()
_counter = itertools.count()
_lock = threading.Lock()


class _Handle(Protocol):
    vector_store: Any
    collection: str


H = TypeVar("H", bound=_Handle)


def invalidates(
    method: Callable[Concatenate[H, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[H, P], Coroutine[Any, Any, R]]:
    """Mark a handle's write method: when it returns or fails, its collection is `written`."""

    async def write(handle: H, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(handle, *args, **kwargs)
        finally:
            written(handle.vector_store, handle.collection)

    functools.update_wrapper(write, method)
    return write


def written(store: object, collection: str) -> None:
    """Record a write to `collection` of `store`: cached answers about it are dead."""
    with _lock:
        collections = _generations.setdefault(store, {})
        collections[collection] = collections.get(collection, 0) + 1


def generation(store: object, collection: str) -> int:
    """How many writes to `collection` of `store` this process has seen."""
    with _lock:
        return _generations.get(store, {}).get(collection, 0)


def _serial(store: object) -> int:
    with _lock:
        serial = _serials.get(store)
        if serial is None:
            serial = _serials[store] = next(_counter)
        return serial


def scope_key(metadata_filter: Any) -> str:
    """A hashable, order-independent form of a handle's metadata filter."""
    return json.dumps(metadata_filter, sort_keys=True, default=str)


class QueryCache(Generic[V]):
    """Answers up to a total of `maxsize` (counted by `sizeof`, else one per answer), each
    for at most `ttl` seconds and only until the next write to its collection. Thread-safe."""

    def __init__(
        self, *, ttl: float, maxsize: int = 1024, sizeof: Callable[[V], int] | None = None
    ) -> None:
        if not ttl > 0:
            raise InvalidArgumentError(f"ttl must be above 0 seconds, got {ttl!r}", argument="ttl")
        self.ttl = ttl
        measure = None if sizeof is None else (lambda entry: sizeof(entry[1]))
        self._entries: TTLCache[Hashable, tuple[int, V]] = TTLCache(
            maxsize=maxsize, ttl=ttl, getsizeof=measure
        )
        self._lock = threading.Lock()

    def get(self, store: object, collection: str, scope: str, request: Hashable) -> V | None:
        """The cached answer to `request` in `scope`, unless written since or expired."""
        key = (_serial(store), collection, scope, request)
        with self._lock:
            entry = self._entries.get(key)
        if entry is None or entry[0] != generation(store, collection):
            return None
        return entry[1]

    def put(
        self, store: object, collection: str, scope: str, request: Hashable, answer: V, *, seen: int
    ) -> None:
        """Keep `answer`, computed when the collection was at generation `seen` (read it with
        `generation` before searching, so a write during the search is never hidden)."""
        key = (_serial(store), collection, scope, request)
        with self._lock:
            self._entries[key] = (seen, answer)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
