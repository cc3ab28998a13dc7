"""kill -9 of a real `archivist serve` during a multi-file upload, then restart and audit.

Used by the crash test (one trial) and benchmarks/service/bench_service_crash.py (many trials).
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from service_helpers import ServeProcess, free_port, wait_final

from archivist.embedding import LocalEmbeddingModel
from archivist.rag import QdrantStore
from archivist.rag.knowledge import factories
from archivist.service import ServiceSettings
from archivist.service.storage import catalog
from archivist.service.storage.database import make_engine
from archivist.service.storage.keys import create_key

KB = "crash"
TENANT = "crash-tenant"
WORDS = [
    "archive",
    "ledger",
    "invoice",
    "tenant",
    "vector",
    "shard",
    "replica",
    "lease",
    "queue",
    "parser",
    "chunk",
    "embed",
    "search",
    "citation",
    "refund",
    "policy",
    "travel",
    "badge",
    "laptop",
    "holiday",
    "garage",
    "audit",
]


def make_files(count: int, paragraphs: int = 8, seed: int = 7) -> list[tuple[str, bytes]]:
    """`count` distinct text files of a few chunks each."""
    rng = random.Random(seed)
    files = []
    for n in range(count):
        text = "\n\n".join(
            " ".join(rng.choice(WORDS) for _ in range(90)) + f" (file {n}, part {p})."
            for p in range(paragraphs)
        )
        files.append((f"doc-{n:03d}.txt", text.encode()))
    return files


@dataclass
class TrialResult:
    """What one trial found after the restart."""

    accepted: list[str]
    statuses: dict[str, str]
    chunks_by_filename: dict[str, int]
    killed_after_ready: int
    verify_ok: bool
    stored_ids: set[str]
    problems: list[str] = field(default_factory=list)


def _key(home: Path) -> str:
    engine = make_engine(ServiceSettings(home=home).resolved_database_url)
    try:
        return create_key(engine, TENANT).key
    finally:
        engine.dispose()


def _upload_batches(
    url: str, key: str, files: list[tuple[str, bytes]], batch: int, accepted: list[str]
) -> None:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        for start in range(0, len(files), batch):
            part = files[start : start + batch]
            try:
                response = http.post(
                    f"/v1/knowledge-bases/{KB}/documents",
                    files=[("files", (name, data, "text/plain")) for name, data in part],
                )
            except httpx.HTTPError:
                return  # the service died under this request: nothing of it was accepted
            if response.status_code != 202:
                return
            accepted.extend(item["id"] for item in response.json()["items"])


def run_trial(
    home: Path,
    files: list[tuple[str, bytes]],
    *,
    kill_at_ready: int | None,
    batch: int = 10,
    kill_delay: float | None = None,
) -> TrialResult:
    """Upload `files` in batches to a fresh service in `home`; SIGKILL it once `kill_at_ready`
    documents are ready (or after `kill_delay` s); restart, wait, stop and audit the store.
    With neither, the run is a clean one."""
    key = _key(home)
    server = ServeProcess(home, free_port())
    server.start()
    accepted: list[str] = []
    killed_after = -1
    try:
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as http:
            assert http.post("/v1/knowledge-bases", json={"name": KB}).status_code == 201
            uploader = threading.Thread(
                target=_upload_batches, args=(server.url, key, files, batch, accepted)
            )
            started = time.monotonic()
            uploader.start()
            if kill_at_ready is not None or kill_delay is not None:
                while True:
                    items = http.get(f"/v1/knowledge-bases/{KB}/documents").json()["items"]
                    ready = sum(d["status"] == "ready" for d in items)
                    if kill_delay is not None and time.monotonic() - started >= kill_delay:
                        break
                    if kill_at_ready is not None and ready >= kill_at_ready:
                        break
                    time.sleep(0.05)
                killed_after = ready
                server.kill()
            uploader.join(120)
        if killed_after >= 0:
            server.start()
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as http:
            final = wait_final(http, KB, timeout=900)
    finally:
        server.stop()
    statuses = {d["id"]: d["status"] for d in final}
    chunks = {d["filename"]: d["chunk_count"] for d in final}
    verify_ok, stored = asyncio.run(_audit(home))
    result = TrialResult(accepted, statuses, chunks, killed_after, verify_ok, stored)
    missing = [doc for doc in accepted if doc not in statuses]
    if missing:
        result.problems.append(f"accepted but gone: {missing}")
    not_ready = {d: s for d, s in statuses.items() if s != "ready"}
    if not_ready:
        result.problems.append(f"not ready: {not_ready}")
    if stored != set(statuses):
        result.problems.append(f"store holds {sorted(stored ^ set(statuses))} unlike the table")
    if not verify_ok:
        result.problems.append("verify() found incomplete documents")
    return result


async def _audit(home: Path) -> tuple[bool, set[str]]:
    """After the service stopped: verify() of the KB and the document ids the store holds."""
    settings = ServiceSettings(home=home)
    engine = make_engine(settings.resolved_database_url)
    kb_record = catalog.get_kb(engine, TENANT, KB)
    engine.dispose()
    assert kb_record is not None
    async with QdrantStore(path=settings.service_dir / "qdrant") as store:
        kb = factories.knowledge_base(
            kb_record.profile(settings.default_profile()), store, LocalEmbeddingModel()
        )
        report = await kb.verify()
        stored = {summary.document_id for summary in await kb.list_documents()}
    return report.ok, stored
