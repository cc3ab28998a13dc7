"""`archivist serve`'s app and `archivist worker` are assembled by one function,
`runtime.running_service`, so the worker too cuts uploads up at `--index-niceness`."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from niceness_parser import RecordsNiceness, niceness

from archivist._util.thread_priority import MAX_NICENESS
from archivist.cli.main import main
from archivist.service import ServiceSettings, create_app, runtime
from archivist.service.retrieval.offload import OffloadedChunker
from archivist.service.runtime import ServiceRuntime

NICENESS = 7


class Assembled(Exception):
    """Ends the app's or the worker's start once its runtime was looked at."""


@dataclass
class Seen:
    settings: ServiceSettings
    chunker: Any
    parsed_at: list[int]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
    # Uploads are parsed in a child process, which imports `niceness_parser` by name.
    path = os.environ.get("PYTHONPATH")
    here = str(Path(__file__).parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (here, path) if p))
    for name in ("ARCHIVIST_DATABASE_URL", "ARCHIVIST_PGVECTOR_URL", "ARCHIVIST_FILES_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


@pytest.fixture
def assemblies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Seen]:
    """Every entry into `running_service`: the settings, the chunker its indexer got and the
    nice value of the thread that chunked a file with it. The real one runs, over a store on
    this disk (a worker's would be a server), then `Assembled` ends the start."""
    seen: list[Seen] = []
    real = runtime.running_service
    text = tmp_path / "a.txt"
    text.write_text("a passage to chunk", encoding="utf-8")

    @asynccontextmanager
    async def observed(settings: ServiceSettings, **options: Any) -> AsyncIterator[ServiceRuntime]:
        local = settings.model_copy(update={"qdrant_url": None, "pgvector_url": None})
        async with real(local, **options) as service:
            chunker = service.indexer.chunker
            record = tmp_path / f"niceness-{len(seen)}"
            parser = RecordsNiceness(str(record))
            assert [c async for c in chunker.chunk_file(parser, str(text), "a.txt")]
            parsed_at = [int(line) for line in record.read_text().split()]
            seen.append(Seen(settings, chunker, parsed_at))
            raise Assembled
            yield service

    monkeypatch.setattr(runtime, "running_service", observed)
    return seen


def test_serve_and_the_worker_are_assembled_alike_and_chunk_at_the_index_niceness(
    assemblies: list[Seen], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = niceness()
    nicer = min(before + NICENESS, MAX_NICENESS) if sys.platform.startswith("linux") else before

    app = create_app(ServiceSettings(home=home, index_niceness=NICENESS, parse_memory_mb=300))

    async def start() -> None:
        async with app.router.lifespan_context(app):
            pass

    with pytest.raises(Assembled):
        asyncio.run(start())
    assert len(assemblies) == 1

    worker = ["worker", "--qdrant-url", "http://127.0.0.1:1", "--index-niceness", str(NICENESS)]
    worker += ["--parse-memory-mb", "300"]
    assert main(worker) != 0
    assert "internal error Assembled" in capsys.readouterr().err
    assert len(assemblies) == 2

    serve, work = assemblies
    assert work.settings.qdrant_url == "http://127.0.0.1:1"  # the worker's own settings
    for seen in (serve, work):
        assert seen.settings.index_niceness == NICENESS
        assert seen.parsed_at == [nicer]  # the child that parsed ran NICENESS steps nicer
        assert isinstance(seen.chunker, OffloadedChunker)
        assert seen.chunker.niceness == NICENESS
        # Every upload is parsed in a child within the configured limits.
        assert seen.chunker.process_bytes == 0
        assert seen.chunker.limits == seen.settings.parse_limits
        assert seen.chunker.limits.memory_bytes == 300 * 1024 * 1024
    assert niceness() == before
