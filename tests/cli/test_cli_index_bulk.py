"""`archivist index` loads a knowledge base it makes (or empties with --rebuild) in bulk, its
indexes built once at the end, and brings an existing one's up to date after the writes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from cli_helpers import run

from archivist.rag.store.qdrant import QdrantStore

Method = Callable[[QdrantStore, str], Awaitable[None]]


def _spied(name: str, method: Method, seen: list[str]) -> Method:
    async def spy(self: QdrantStore, collection: str) -> None:
        seen.append(name)
        await method(self, collection)

    return spy


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The bulk-load and optimize calls the real store gets, in order."""
    seen: list[str] = []
    for name in ("begin_bulk_load", "end_bulk_load", "optimize"):
        monkeypatch.setattr(QdrantStore, name, _spied(name, getattr(QdrantStore, name), seen))
    return seen


def test_a_new_knowledge_base_is_loaded_in_bulk_and_an_existing_one_is_not(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], calls: list[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "owls.md").write_text("# Owls\n\nOwls hunt at night.\n")
    assert run(capsys, "index", str(docs))[0] == 0
    assert calls == ["begin_bulk_load", "end_bulk_load", "optimize"]  # the end optimizes
    calls.clear()
    (docs / "bats.md").write_text("# Bats\n\nBats hunt at night too.\n")
    assert run(capsys, "index", str(docs))[0] == 0
    assert calls == ["optimize"]
    calls.clear()
    assert run(capsys, "index", str(docs), "--rebuild", "--yes")[0] == 0
    assert calls == ["begin_bulk_load", "end_bulk_load", "optimize"]
    code, out, _ = run(capsys, "search", "hunting at night")
    assert code == 0 and "owls.md" in out and "bats.md" in out
