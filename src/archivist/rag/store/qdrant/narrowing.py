"""A search filter (paths, types, dates, metadata, match) as Qdrant conditions within a scope."""

from __future__ import annotations

from datetime import datetime

from archivist.rag.store.core.layout import SOURCE
from archivist.rag.store.qdrant.backend import QdrantBackend
from archivist.rag.store.qdrant.filter import (
    Absent,
    AnyOf,
    Between,
    Condition,
    Either,
    IndexKind,
    Match,
    Where,
    index_kind,
    metadata_path,
)
from archivist.rag.store.qdrant.matching import match_indexes, match_where
from archivist.rag.store.search_filter import (
    INDEXED_AT_KEY,
    MODIFIED_KEY,
    PATH_KEY,
    Range,
    SearchFilter,
)


async def narrowed(
    backend: QdrantBackend, collection: str, scope: Where, search_filter: SearchFilter
) -> Where | None:
    """`scope` narrowed by `search_filter` as native conditions (payload indexes made
    once per field), or None when nothing can match. Path globs and types are resolved
    against the distinct `source` and `path` values within `scope` (a facet), and then
    matched by value."""
    conditions: list[Condition] = []
    indexes: dict[str, IndexKind] = {}
    if search_filter.paths or search_filter.types:
        path = metadata_path(PATH_KEY)
        indexes.update({SOURCE: "keyword", path: "keyword"})
        await backend.ensure_indexes(collection, indexes)
        total = await backend.count(collection, scope)
        options = []
        for key in (SOURCE, path):
            values = await backend.facet(collection, key, scope, limit=max(total, 1))
            chosen = tuple(sorted(v for v in values if search_filter.path_matches(v)))
            if chosen:
                options.append(Where((AnyOf(key, chosen),)))
        if not options:
            return None
        conditions.append(Either(tuple(options)))
    if search_filter.since is not None:
        since = search_filter.since.isoformat()
        modified, indexed = metadata_path(MODIFIED_KEY), metadata_path(INDEXED_AT_KEY)
        indexes.update({modified: "datetime", indexed: "datetime"})
        conditions.append(
            Either(
                (
                    Where((Between(modified, gte=since, dates=True),)),
                    Where((Absent(modified), Between(indexed, gte=since, dates=True))),
                )
            )
        )
    for key, wanted in search_filter.where.items():
        field = metadata_path(key)
        if isinstance(wanted, Range):
            conditions.append(between(field, wanted))
            indexes.setdefault(field, "datetime" if wanted.is_dates else "float")
        elif wanted is None:
            conditions.append(Absent(field))
        else:
            conditions.append(Match(field, wanted))
            indexes.setdefault(field, index_kind(wanted))
    matched = Where()
    if search_filter.match is not None:
        matched = match_where(search_filter.match)
        indexes = match_indexes(search_filter.match) | indexes
    await backend.ensure_indexes(collection, indexes)
    return Where(scope.must + tuple(conditions) + matched.must, scope.must_not + matched.must_not)


def between(key: str, wanted: Range) -> Between:
    """`wanted` as a range condition on `key` (dates as ISO strings)."""

    def bound(value: float | datetime | None) -> float | str | None:
        return value.isoformat() if isinstance(value, datetime) else value

    return Between(
        key,
        gte=bound(wanted.gte),
        gt=bound(wanted.gt),
        lte=bound(wanted.lte),
        lt=bound(wanted.lt),
        dates=wanted.is_dates,
    )
