"""`archivist serve`'s app and `archivist worker` are assembled by one function,
`runtime.running_service`, so the worker too cuts uploads up at `--index-niceness`."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from archivist._util.thread_priority import MAX_NICENESS
from archivist.cli.main import main
from archivist.message import TextBlock
from archivist.rag.document import Section
from archivist.rag.parser.base import ParserBase
from archivist.service import ServiceSettings, create_app, runtime
from archivist.service.indexing.offload import OffloadedChunker
from archivist.service.runtime import ServiceRuntime

NICENESS = 7


class Assembled(Exception):
    """Ends the app's or the worker's start once its runtime was looked at."""


def _niceness() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


class RecordsNiceness(ParserBase):
    """One Section; notes the nice value of the thread that parses."""

    supported_media_types = ["text/plain"]

    def __init__(self) -> None:
        self.seen: list[int] = []

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        self.seen.append(_niceness())
        return [Section(content=TextBlock(text="a passage to chunk"), source=filename)]


@dataclass
class Seen:
    settings: ServiceSettings
    chunker: Any
    parsed_at: list[int]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path / "home"))
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
            parser = RecordsNiceness()
            assert [c async for c in chunker.chunk_file(parser, str(text), "a.txt")]
            seen.append(Seen(settings, chunker, parser.seen))
            raise Assembled
            yield service

    monkeypatch.setattr(runtime, "running_service", observed)
    return seen


def test_serve_and_the_worker_are_assembled_alike_and_chunk_at_the_index_niceness(
    assemblies: list[Seen], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _niceness()
    nicer = min(before + NICENESS, MAX_NICENESS) if sys.platform.startswith("linux") else before

    app = create_app(ServiceSettings(home=home, index_niceness=NICENESS))

    async def start() -> None:
        async with app.router.lifespan_context(app):
            pass

    with pytest.raises(Assembled):
        asyncio.run(start())
    assert len(assemblies) == 1

    worker = ["worker", "--qdrant-url", "http://127.0.0.1:1", "--index-niceness", str(NICENESS)]
    assert main(worker) != 0
    assert "internal error Assembled" in capsys.readouterr().err
    assert len(assemblies) == 2

    serve, work = assemblies
    assert work.settings.qdrant_url == "http://127.0.0.1:1"  # the worker's own settings
    for seen in (serve, work):
        assert seen.settings.index_niceness == NICENESS
        assert seen.parsed_at == [nicer]  # the thread that chunked ran NICENESS steps nicer
        assert isinstance(seen.chunker, OffloadedChunker)
        assert seen.chunker.niceness == NICENESS
    assert _niceness() == before
