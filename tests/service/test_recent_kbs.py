"""Searches find their knowledge base from memory: one database lookup per interval, never
another tenant's record, and a deletion or rename in this process seen at once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_helpers import client, new_key, running_service
from sqlalchemy import Engine, delete

from archivist.service import ServiceSettings
from archivist.service.storage import catalog
from archivist.service.storage.database import knowledge_bases, make_engine, writing
from archivist.service.storage.recent import RecentlyFound

SEARCH = "/v1/knowledge-bases/{}/search"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    made = make_engine(f"sqlite:///{tmp_path / 'service.db'}")
    yield made
    made.dispose()


def test_recently_found_keeps_each_database_apart_and_forgets_on_request(tmp_path: Path) -> None:
    first = make_engine(f"sqlite:///{tmp_path / 'a.db'}")
    second = make_engine(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        found: RecentlyFound[str, int] = RecentlyFound(ttl=60, maxsize=8)
        found.put(first, "x", 1)
        found.put(first, "y", 2)
        assert found.get(first, "x") == 1
        assert found.get(second, "x") is None  # another database, another cache
        found.forget(first, lambda _key, value: value == 2)
        assert found.get(first, "y") is None and found.get(first, "x") == 1
    finally:
        first.dispose()
        second.dispose()


def test_recently_found_entries_expire(engine: Engine) -> None:
    found: RecentlyFound[str, int] = RecentlyFound(ttl=0.05, maxsize=8)
    found.put(engine, "x", 1)
    assert found.get(engine, "x") == 1
    time.sleep(0.1)
    assert found.get(engine, "x") is None


def test_recent_kb_answers_only_what_get_kb_found_for_that_tenant(engine: Engine) -> None:
    catalog.create_kb(engine, "acme", "docs", "")
    assert catalog.recent_kb(engine, "acme", "docs") is None  # never looked up yet
    assert catalog.get_kb(engine, "globex", "docs") is None
    assert catalog.recent_kb(engine, "globex", "docs") is None  # a miss is not remembered
    kb = catalog.get_kb(engine, "acme", "docs")
    assert kb is not None
    assert catalog.recent_kb(engine, "acme", "docs") == kb
    assert catalog.recent_kb(engine, "globex", "docs") is None  # another tenant, same name


def test_a_deletion_or_rename_here_is_seen_at_once(engine: Engine) -> None:
    catalog.create_kb(engine, "acme", "docs", "")
    catalog.create_kb(engine, "acme", "notes", "")
    docs = catalog.get_kb(engine, "acme", "docs")
    notes = catalog.get_kb(engine, "acme", "notes")
    assert docs is not None and notes is not None
    catalog.update_kb(engine, docs, "manuals", None)
    assert catalog.recent_kb(engine, "acme", "docs") is None
    catalog.delete_kb(engine, notes.id)
    assert catalog.recent_kb(engine, "acme", "notes") is None
    assert catalog.get_kb(engine, "acme", "notes") is None


def test_a_deletion_elsewhere_shows_once_the_entry_expires(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's change cannot reach this cache: its entries expire instead."""
    monkeypatch.setattr(catalog, "_found_kbs", RecentlyFound(ttl=0.2, maxsize=8))
    catalog.create_kb(engine, "acme", "docs", "")
    assert catalog.get_kb(engine, "acme", "docs") is not None
    with writing(engine) as db:  # what a replica deleting it does to the shared database
        db.execute(delete(knowledge_bases))
    assert catalog.recent_kb(engine, "acme", "docs") is not None  # still remembered
    time.sleep(0.3)
    assert catalog.recent_kb(engine, "acme", "docs") is None


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(tenant, name) of each knowledge-base lookup that reached the database."""
    seen: list[tuple[str, str]] = []
    original = catalog.get_kb

    def get_kb(engine: Engine, tenant: str, name: str) -> Any:
        seen.append((tenant, name))
        return original(engine, tenant, name)

    monkeypatch.setattr(catalog, "get_kb", get_kb)
    return seen


def test_searches_look_their_knowledge_base_up_once_per_interval(
    tmp_path: Path, lookups: list[tuple[str, str]]
) -> None:
    settings = ServiceSettings(home=tmp_path, query_cache_seconds=0)
    acme, globex = new_key(settings, "acme"), new_key(settings, "globex")
    with running_service(settings) as url, client(url, acme) as http, client(url, globex) as other:
        assert http.post("/v1/knowledge-bases", json={"name": "docs"}).status_code == 201
        lookups.clear()
        for n in range(5):
            answer = http.post(SEARCH.format("docs"), json={"query": f"pruning orchards {n}"})
            assert answer.status_code == 200, answer.text
        assert lookups == [("acme", "docs")]
        # Another tenant's search of the same name is its own lookup, and finds nothing.
        missing = other.post(SEARCH.format("docs"), json={"query": "pruning orchards"})
        assert missing.status_code == 404
        assert lookups == [("acme", "docs"), ("globex", "docs")]
        # Deleted through this service: the next search no longer finds it.
        assert http.delete("/v1/knowledge-bases/docs").status_code == 204
        gone = http.post(SEARCH.format("docs"), json={"query": "pruning orchards"})
        assert gone.status_code == 404
