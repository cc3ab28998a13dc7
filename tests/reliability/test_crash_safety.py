"""Crash safety of `path=` stores: ingestion killed with SIGKILL at random points.

A child process ingests a fixed plan (six multi-chunk documents, then three of them re-inserted
as new versions; every other one streamed as an async iterable of chunks) in small write
batches and reports every embedded batch. Each seeded trial kills it after a random number of
batches plus a random sub-batch delay (also during start-up and collection creation), then
checks in this process that:
  - the store opens (the kernel dropped the flock; the stale lock file naming the dead PID does
    not block);
  - every listed document is whole, or `verify()` reports it as incomplete;
  - after `repair()` (half the trials) verify is clean and every document is exactly one
    version of the plan, never a mixture;
  - re-running the same ingest converges to the full, correct state.
While the child holds the store, opening it here fails with "store at ... is locked by PID <child>".
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from archivist.message import TextBlock
from archivist.rag.knowledge.knowledge_base import KnowledgeBase
from archivist.rag.store.qdrant import QdrantStore, StoreLockedError

TRIALS = int(os.environ.get("ARCHIVIST_CRASH_TRIALS", "24"))
SEED = int(os.environ.get("ARCHIVIST_CRASH_SEED", "11"))

INGEST = r'''
import asyncio, sys
from archivist.message import TextBlock
from archivist.rag.document import Chunk
from archivist.rag.knowledge.knowledge_base import KnowledgeBase, NewDocument
from archivist.rag.store.qdrant import QdrantStore
from archivist.testing.embedding import HashEmbeddingModel

DIMENSIONS = 16


class SlowHashEmbedder(HashEmbeddingModel):
    """The shared hash embedder (each text hashed whole); each batch takes a moment and is
    reported, so a kill can land between writes."""

    def __init__(self, progress):
        super().__init__(DIMENSIONS, model="hash-embedder", whole_text=True, lowercase=False)
        self.progress = progress

    async def _embed_batch(self, batch, input_type):
        self.progress()
        await asyncio.sleep(0.002)
        return await super()._embed_batch(batch, input_type)


def texts(document_id, version):
    count = 5 + (sum(map(ord, document_id)) + 3 * version) % 8
    return [f"{document_id} version {version} chunk {i}" for i in range(count)]


PLAN = [(f"d{i}", 1) for i in range(6)] + [("d1", 2), ("d3", 2), ("d5", 2)]
EXPECTED = {document_id: version for document_id, version in PLAN}


def chunks(document_id, version):
    body = texts(document_id, version)
    return [
        Chunk(content=TextBlock(text=t), source=f"{document_id}.txt", chunk_index=i,
              total_chunks=len(body), metadata={"version": version})
        for i, t in enumerate(body)
    ]


async def ingest(path, progress=lambda: None):
    async with QdrantStore(path=path, auto_optimize_threshold=None) as store:
        progress()
        kb = KnowledgeBase("crash", "crash test", SlowHashEmbedder(progress), store, "docs",
                           {"tenant": "t"}, write_batch_size=3)
        for number, (document_id, version) in enumerate(PLAN):
            if number % 2:  # every other document streamed as an async iterable of chunks
                await kb.insert_documents([NewDocument(stream(document_id, version), document_id)])
            else:
                await kb.insert_document(chunks(document_id, version), document_id)


async def stream(document_id, version):
    for chunk in chunks(document_id, version):
        yield chunk


if __name__ == "__main__":
    def progress():
        print("step", flush=True)
    asyncio.run(ingest(sys.argv[1], progress))
    print("done", flush=True)
'''


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("crash") / "ingest.py"
    path.write_text(INGEST)
    namespace: dict[str, Any] = {"__name__": "crash_ingest"}
    exec(compile(INGEST, str(path), "exec"), namespace)
    return path, namespace


def handle(store: QdrantStore) -> KnowledgeBase:
    class NoEmbedder:  # reads below never embed; KnowledgeBase only needs `dimensions`
        dimensions = 16
        model = "none"
        supports_multimodal = False

    return KnowledgeBase("crash", "check", NoEmbedder(), store, "docs", {"tenant": "t"})  # type: ignore[arg-type]


async def versions_present(kb: KnowledgeBase, texts: Any) -> dict[str, int]:
    """document id -> the plan version its chunks hold; fails on a mixture."""
    found = {}
    for summary in await kb.list_documents():
        stored = await kb.list_chunks(summary.document_id, limit=100)
        body = [c.content.text for c in stored if isinstance(c.content, TextBlock)]
        matches = [v for v in (1, 2) if body == texts(summary.document_id, v)]
        assert matches, f"{summary.document_id} holds a mixture: {body}"
        assert summary.chunk_count == len(body) == stored[0].total_chunks
        found[summary.document_id] = matches[0]
    return found


def run_child(script_path: Path, store_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script_path), str(store_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.heavy
async def test_sigkill_during_ingest_then_verify_repair_rerun(
    tmp_path: Path, script: tuple[Path, dict[str, Any]]
) -> None:
    script_path, ingest = script
    rng = random.Random(SEED)
    # How many progress lines a full run prints, from one uninterrupted run.
    full = subprocess.run(
        [sys.executable, str(script_path), str(tmp_path / "reference")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    total_steps = full.stdout.count("step")
    assert total_steps > 20 and full.stdout.strip().endswith("done")

    flagged = repaired_trials = 0
    store_path = tmp_path / "store-0"
    for trial in range(TRIALS):
        if trial % 5 == 0:  # a fresh store now and then: kills during collection creation
            store_path = tmp_path / f"store-{trial}"
        child = run_child(script_path, store_path)
        assert child.stdout is not None
        kill_after = rng.randint(0, total_steps)
        seen = 0
        while seen < kill_after:
            line = child.stdout.readline()
            if not line or line.strip() == "done":
                break
            seen += 1
        if seen >= 1 and trial < 3:  # the child holds the store: a second opener is refused
            with pytest.raises(StoreLockedError, match=f"locked by PID {child.pid}$"):
                async with QdrantStore(path=store_path):
                    pass
        time.sleep(rng.uniform(0, 0.004))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        child.stdout.close()
        assert child.stderr is not None
        child.stderr.close()

        async with QdrantStore(path=store_path, auto_optimize_threshold=None) as store:
            kb = handle(store)
            report = await kb.verify()
            flagged_ids = {d.document_id for d in report.incomplete}
            flagged += bool(flagged_ids)
            for summary in await kb.list_documents():
                first = await kb.list_chunks(summary.document_id, limit=1)
                whole = summary.chunk_count == first[0].total_chunks
                assert whole or summary.document_id in flagged_ids, (trial, summary, report)
            if trial % 2 == 0:
                repair = await kb.repair()
                repaired_trials += bool(repair.removed)
                assert repair.remaining.ok, repair
                assert {g.document_id for g in repair.removed} == flagged_ids
                present = await versions_present(kb, ingest["texts"])
                for document_id, version in present.items():
                    # Only versions the plan wrote, never "older than the completed one".
                    assert version <= ingest["EXPECTED"][document_id]
        # Re-running the same ingest converges, repaired or not.
        await ingest["ingest"](store_path)
        async with QdrantStore(path=store_path, auto_optimize_threshold=None) as store:
            kb = handle(store)
            assert (await kb.verify()).ok
            assert await versions_present(kb, ingest["texts"]) == ingest["EXPECTED"]
    # The seeded kills did land in the middle of writes.
    assert flagged >= 3 and repaired_trials >= 1, (flagged, repaired_trials)


async def test_a_stale_lock_file_of_a_dead_process_does_not_block(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, sys, time\n"
            "from archivist.rag.store.qdrant import QdrantStore\n"
            "async def main():\n"
            "    async with QdrantStore(path=sys.argv[1]):\n"
            "        print('holding', flush=True)\n"
            "        time.sleep(60)\n"
            "asyncio.run(main())\n",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "holding"
    with pytest.raises(
        StoreLockedError, match=f"store at {tmp_path} is locked by PID {holder.pid}$"
    ):
        async with QdrantStore(path=tmp_path):
            pass
    holder.kill()
    holder.wait(timeout=30)
    holder.stdout.close()
    assert (tmp_path / "store.lock").read_text().strip() == str(holder.pid)  # left behind
    async with QdrantStore(path=tmp_path) as store:
        assert (tmp_path / "store.lock").read_text().strip() == str(os.getpid())
        assert await store.list_documents("anything") == []
    await asyncio.sleep(0)


def _records(document_id: str, version: int, indexes: range, total: int) -> list[Any]:
    from archivist.rag.document import Chunk
    from archivist.rag.record import VectorRecord

    return [
        VectorRecord(
            vector=[1.0 + i] + [0.5] * 15,
            document_id=document_id,
            chunk=Chunk(
                content=TextBlock(text=f"{document_id} v{version} {i}"),
                source="s.txt",
                chunk_index=i,
                total_chunks=total,
                metadata={"tenant": "t", "version": version},
            ),
        )
        for i in indexes
    ]


async def test_verify_and_repair_on_the_states_a_kill_can_leave(tmp_path: Path) -> None:
    """The leftovers written deterministically (each raw `insert` is its own generation)."""
    async with QdrantStore(path=tmp_path, auto_optimize_threshold=None) as store:
        await store.create_collection("docs", 16)
        # killed mid re-insert: old v1 whole + 2 of 5 chunks of v2
        await store.insert("docs", _records("mid", 1, range(3), 3))
        await store.insert("docs", _records("mid", 2, range(2), 5))
        # killed after the new version was whole but before the old one was dropped
        await store.insert("docs", _records("late", 1, range(2), 2))
        await store.insert("docs", _records("late", 2, range(4), 4))
        # killed during a first insert
        await store.insert("docs", _records("first", 1, range(2), 6))
        # whole, written by two insert calls: not a leftover
        await store.insert("docs", _records("split", 1, range(2), 4))
        await store.insert("docs", _records("split", 1, range(2, 4), 4))
        await store.insert("docs", _records("fine", 1, range(3), 3))
        kb = handle(store)
        counts = {d.document_id: d.chunk_count for d in await kb.list_documents()}
        assert counts == {"first": 2, "fine": 3, "late": 6, "mid": 5, "split": 4}
        report = await kb.verify()
        assert report.documents_checked == 5
        problems = {d.document_id: d.problem for d in report.incomplete}
        assert sorted(problems) == ["first", "late", "mid"]
        assert problems["mid"].startswith("2 generations visible")
        assert problems["first"].startswith("holds 2 of 6 chunks")
        # Another tenant's handle sees none of it.
        other = KnowledgeBase(
            "o", "o", handle(store).embedding_model, store, "docs", {"tenant": "u"}
        )
        assert (await other.repair()).removed == []

        repair = await kb.repair()
        assert repair.remaining.ok and repair.documents_removed == ["first"]
        assert sorted((g.document_id, g.chunk_count) for g in repair.removed) == [
            ("first", 2),
            ("late", 2),
            ("mid", 2),
        ]
        versions = {}
        for summary in await kb.list_documents():
            stored = await kb.list_chunks(summary.document_id, limit=10)
            assert summary.chunk_count == len(stored) == stored[0].total_chunks
            versions[summary.document_id] = {c.metadata["version"] for c in stored}
        assert versions == {"fine": {1}, "late": {2}, "mid": {1}, "split": {1}}
        assert (await kb.repair()).removed == []  # idempotent
