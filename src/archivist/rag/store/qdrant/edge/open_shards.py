"""A bound on the Edge shards one process keeps open.

Each open shard maps its segment files into memory and runs its own search threads, and Linux
caps a process's memory maps (`vm.max_map_count`, 65,530 by default). Without a bound, a
service that has touched about a thousand knowledge bases can create or load no more: each
further one fails with "Cannot allocate memory". Past the bound, the least recently used
shards are flushed and closed; each loads again on its next use.
"""

from __future__ import annotations

from collections import OrderedDict

from archivist.rag.store.qdrant.edge.collection import EdgeCollection

MAX_OPEN_COLLECTIONS = 256
"""Collections whose shards one store keeps open unless told otherwise: about a quarter of
the default map limit for small collections, leaving the rest to large ones and the model."""


class OpenShards:
    """The collections in order of last use; at most `limit` of them keep their shard open."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._recent: OrderedDict[str, EdgeCollection] = OrderedDict()

    def use(self, name: str, collection: EdgeCollection) -> None:
        """Note that `collection` is about to be used, then close the least recently used
        others past the limit. A collection with a write in flight on a worker thread
        (`busy`) stays open; the bound is then exceeded until that write ends."""
        self._recent[name] = collection
        self._recent.move_to_end(name)
        excess = len(self._recent) - self.limit
        if excess <= 0:
            return  # every engine call passes here: no copy of the order unless over
        for old_name, old in list(self._recent.items()):
            if excess <= 0:
                break
            if old is collection or old.busy:
                continue
            del self._recent[old_name]
            excess -= 1
            old.close()

    def forget(self, name: str) -> None:
        """Stop tracking `name` (its collection was closed or deleted)."""
        self._recent.pop(name, None)

    def clear(self) -> None:
        """Stop tracking every collection."""
        self._recent.clear()
