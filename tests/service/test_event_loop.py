"""Slow work never runs on the event loop: the service keeps answering while the worst
small file (one 2 MB CSV line, which once stalled `/healthz` for 22 s) indexes, and a
knowledge base's own embedding model loads in a worker thread."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from service_helpers import client

from archivist._util.thread_priority import lower_this_thread
from archivist.embedding import EmbeddingModelBase, OnnxEmbeddingModel
from archivist.embedding.registry import DEFAULT_EMBEDDING_MODEL
from archivist.errors import InvalidArgumentError
from archivist.service.retrieval.embedding import SplitModel, service_model
from archivist.service.retrieval.offload import iterate_in_thread

ONE_LINE_CSV = b"b," * 1_000_000 + b"\n"


@pytest.mark.heavy
def test_healthz_stays_responsive_while_a_one_line_csv_indexes(service) -> None:
    assert len(ONE_LINE_CSV) < service.settings.max_upload_bytes
    with client(service.url, service.keys["globex"]) as http:
        assert http.post("/v1/knowledge-bases", json={"name": "csv"}).status_code == 201
        upload = http.post(
            "/v1/knowledge-bases/csv/documents", files={"files": ("l.csv", ONE_LINE_CSV)}
        )
        assert upload.status_code == 202
        doc = upload.json()["items"][0]["id"]
        slowest, polls, status = 0.0, 0, "queued"
        deadline = time.monotonic() + 300
        while status not in ("ready", "failed") and time.monotonic() < deadline:
            started = time.monotonic()
            assert http.get("/healthz").status_code == 200
            slowest = max(slowest, time.monotonic() - started)
            polls += 1
            status = http.get(f"/v1/knowledge-bases/csv/documents/{doc}").json()["status"]
            time.sleep(0.05)
        assert status == "ready", status
        assert polls >= 5  # it was measured while the file was being worked on
        assert slowest < 2.0, f"/healthz took {slowest:.1f} s while the CSV indexed"


async def test_a_knowledge_base_model_loads_off_the_event_loop_once(tmp_path: Path) -> None:
    from archivist.embedding import LocalEmbeddingModel
    from archivist.embedding.registry import register_embedding_model
    from archivist.rag import QdrantStore
    from archivist.service.retrieval.kb_profiles import KBProfiles
    from archivist.service.settings import ServiceSettings
    from archivist.service.state import ServiceState
    from archivist.service.storage.catalog import KBRecord

    default = LocalEmbeddingModel()
    register_embedding_model("loop-test-model", LocalEmbeddingModel, replace=True)
    loads: list[int] = []

    def load(name: str) -> EmbeddingModelBase:
        loads.append(threading.get_ident())
        return LocalEmbeddingModel()

    settings = ServiceSettings(home=tmp_path)
    profiles = KBProfiles(settings, default, load)
    none: Any = None
    async with QdrantStore(path=str(tmp_path / "q")) as store:
        state = ServiceState(settings, none, store, default, none, none, none, profiles=profiles)
        record = KBRecord(
            id="k", tenant="t", name="k", description="", collection="c", created_at=0.0
        )
        chosen = record.model_copy(update={"embedding_model": "loop-test-model"})
        loop_thread = threading.get_ident()
        assert (await state.handle(record)).embedding_model is default
        assert loads == []
        first = await state.handle(chosen)
        second = await state.handle(chosen)
        assert len(loads) == 1 and loads[0] != loop_thread
        assert first.embedding_model is second.embedding_model is not default


def _niceness() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
async def test_uploads_are_cut_up_at_a_lower_cpu_priority_than_requests() -> None:
    """On a busy machine the loop answering requests gets the CPU before the thread that
    parses and chunks; the loop's own thread keeps its priority."""
    seen: list[int] = []

    async def sections() -> AsyncIterator[int]:
        seen.append(_niceness())
        yield 1

    before = _niceness()
    assert [item async for item in iterate_in_thread(sections, niceness=10)] == [1]
    assert seen == [min(before + 10, 19)]
    assert _niceness() == before
    seen.clear()
    assert [item async for item in iterate_in_thread(sections)] == [1]
    assert seen == [before]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
async def test_the_service_embeds_documents_at_a_lower_cpu_priority_than_queries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its document model runs on a nicer thread of its own; queries keep the shared ones."""
    model = service_model(DEFAULT_EMBEDDING_MODEL, "unused", 1, index_niceness=10)
    assert isinstance(model, SplitModel)
    documents = model.documents.inner
    assert isinstance(documents, OnnxEmbeddingModel)
    seen: dict[str, int] = {}
    embed = OnnxEmbeddingModel._embed_sync

    def recording(self: OnnxEmbeddingModel, texts: list[str], input_type: str) -> Any:
        seen[input_type] = _niceness()
        return embed(self, texts, input_type)  # type: ignore[arg-type]

    embed_queries = OnnxEmbeddingModel._embed_queries_sync

    def recording_queries(self: OnnxEmbeddingModel, texts: list[str]) -> Any:
        seen["query"] = _niceness()
        return embed_queries(self, texts)

    monkeypatch.setattr(OnnxEmbeddingModel, "_embed_sync", recording)
    monkeypatch.setattr(OnnxEmbeddingModel, "_embed_queries_sync", recording_queries)
    before = _niceness()
    await documents(["a passage"], "document")
    await model.query_model(["a question"], "query")
    assert seen == {"document": min(before + 10, 19), "query": before}
    assert _niceness() == before


def test_a_negative_niceness_is_refused_by_name() -> None:
    with pytest.raises(InvalidArgumentError, match="niceness"):
        lower_this_thread(-1)


async def test_a_system_that_refuses_the_lower_priority_still_indexes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sandbox may filter setpriority: the parse thread then runs at the usual priority."""

    def refused(*_: object) -> None:
        raise PermissionError("setpriority: operation not permitted")

    monkeypatch.setattr(os, "setpriority", refused)

    async def items() -> AsyncIterator[int]:
        yield 1
        yield 2

    async def collected() -> list[int]:
        return [item async for item in iterate_in_thread(items, niceness=10)]

    assert await asyncio.wait_for(collected(), 30) == [1, 2]  # a dead thread would hang it
