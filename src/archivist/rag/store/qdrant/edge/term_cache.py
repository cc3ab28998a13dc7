"""Query terms' IDF per collection state, so repeated terms skip the engine.

A search weighs its query's terms by their IDF among the chunks in its scope: one engine
query per term. Queries share most of their terms, and an Edge shard changes only through
this process, so an answer read at one `EdgeCollection.version` holds until that version
changes. Entries are keyed by the collection version and the exact scope, so a tenant's
scope never answers another's, and any write makes every earlier entry unreachable (the
least recently used fall out).
"""

from __future__ import annotations

from collections.abc import Sequence

from cachetools import LRUCache

from archivist.rag.store.qdrant.filter import Where

MAX_TERMS = 100_000
"""Terms (present or absent) kept over all collections and scopes: a few MiB at most."""

_Scope = tuple[int, Where]


class TermIdfCache:
    """`term -> IDF` (None: no chunk in scope holds it) per (collection version, scope)."""

    def __init__(self, max_terms: int = MAX_TERMS) -> None:
        self._scopes: LRUCache[_Scope, dict[int, float | None]] = LRUCache(
            maxsize=max_terms, getsizeof=lambda terms: len(terms) + 1
        )

    def known(self, version: int, where: Where, terms: Sequence[int]) -> dict[int, float | None]:
        """What is remembered of `terms` at `version` within `where` (absent terms as None)."""
        remembered = self._scopes.get((version, where))
        if remembered is None:
            return {}
        return {term: remembered[term] for term in terms if term in remembered}

    def remember(self, version: int, where: Where, idf: dict[int, float | None]) -> None:
        """Keep `idf` (None for a term no chunk in scope holds) as read at `version`."""
        key = (version, where)
        terms = {**self._scopes.get(key, {}), **idf}
        if len(terms) + 1 > self._scopes.maxsize:
            return  # one scope larger than the whole cache: not worth keeping
        self._scopes[key] = terms  # re-set: the cache weighs the dict as it is now
