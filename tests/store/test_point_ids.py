"""Point ids: writes of whole documents get ids that sort by write time; inserts keep stable ids.

The engine looks every upserted id up in each of its segments. Random ids made that lookup
cost more as a collection grew (the write rate at 1M chunks fell to 0.8x of its rate at 20k);
ids that sort after all earlier ones keep it flat.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from archivist.rag.store.core.points import PointWrite
from archivist.rag.store.qdrant import QdrantStore
from archivist.rag.store.qdrant.edge.backend import EdgeBackend
from archivist.testing.store import DIMENSIONS, batches, record


@pytest.fixture
def upserted(monkeypatch: pytest.MonkeyPatch) -> list[uuid.UUID]:
    """The ids of every point the Edge backend upserts, in the order it receives them."""
    ids: list[uuid.UUID] = []
    upsert = EdgeBackend.upsert

    async def recording(self: EdgeBackend, name: str, points: Sequence[PointWrite]) -> None:
        ids.extend(uuid.UUID(point.id) for point in points)
        await upsert(self, name, points)

    monkeypatch.setattr(EdgeBackend, "upsert", recording)
    return ids


async def test_ids_of_document_writes_sort_in_the_order_they_were_written(
    tmp_path: Path, upserted: list[uuid.UUID]
) -> None:
    async with QdrantStore(path=tmp_path) as store:
        await store.create_collection("docs", DIMENSIONS)
        written: list[list[uuid.UUID]] = []
        # "z" before "a", and "a" twice: the order comes from time, not from the document id.
        for document_id in ("z", "a", "m", "a"):
            start = len(upserted)
            await store.replace_document(
                "docs", document_id, batches([record(document_id, i, total=3) for i in range(3)])
            )
            written.append(upserted[start:])
        for earlier, later in itertools.pairwise(written):
            assert len(later) == 3
            assert max(earlier) < min(later)
        assert len(set(upserted)) == 12  # a rewrite never reuses the old version's ids
        assert [len(await store.list_chunks("docs", d, 0, 10)) for d in "zam"] == [3, 3, 3]


async def test_inserting_the_same_records_again_reuses_their_ids(
    tmp_path: Path, upserted: list[uuid.UUID]
) -> None:
    records = [record("a", i, total=3) for i in range(3)]
    async with QdrantStore(path=tmp_path) as store:
        await store.create_collection("docs", DIMENSIONS)
        await store.insert("docs", records)
        first = list(upserted)
        await store.insert("docs", records)
        assert upserted[3:] == first
        await store.insert("docs", [record("a", 0, total=3, tenant="other")])
        assert upserted[-1] not in first
