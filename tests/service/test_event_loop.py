"""Slow work never runs on the event loop: the service keeps answering while the worst
small file (one 2 MB CSV line, which once stalled `/healthz` for 22 s) indexes, and a
knowledge base's own embedding model loads in a worker thread."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from service_helpers import client

from archivist.embedding import EmbeddingModelBase

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
    from archivist.service.dependencies import ServiceState
    from archivist.service.retrieval.kb_profiles import KBProfiles
    from archivist.service.settings import ServiceSettings
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
