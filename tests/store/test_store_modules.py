"""The store package stays readable: each module of `archivist.rag.store` holds one idea, and
none grows past 500 lines (a store engine is split by concern, as Qdrant's and pgvector's are)."""

from __future__ import annotations

from pathlib import Path

import archivist.rag.store

STORE = Path(archivist.rag.store.__file__).parent
MAX_LINES = 500


def test_no_store_module_exceeds_500_lines() -> None:
    sizes = {
        str(path.relative_to(STORE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in STORE.rglob("*.py")
    }
    assert len(sizes) > 20
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}
