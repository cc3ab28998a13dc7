"""`archivist worker` and `serve --workers 0` refuse set-ups where no other process could
share the work, with a message naming the option to give."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from archivist.cli.main import main


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path))
    for name in ("ARCHIVIST_DATABASE_URL", "ARCHIVIST_PGVECTOR_URL", "ARCHIVIST_FILES_URL"):
        monkeypatch.delenv(name, raising=False)


def test_a_worker_needs_shared_vectors(capsys) -> None:
    assert main(["worker"]) == 2
    assert "--pgvector-url or --qdrant-url" in capsys.readouterr().err


def test_a_worker_indexes_at_least_one_document(capsys) -> None:
    assert main(["worker", "--workers", "0", "--pgvector-url", "postgresql://x@127.0.0.1/db"]) == 2
    assert "--workers 0" in capsys.readouterr().err


def test_an_api_only_replica_needs_shared_vectors(capsys) -> None:
    assert main(["serve", "--workers", "0"]) == 2
    assert "archivist worker" in capsys.readouterr().err


def test_one_vector_store_at_a_time(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["worker", "--qdrant-url", "http://q:6333", "--pgvector-url", "postgresql://x/db"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_bad_files_url_is_named(capsys) -> None:
    code = main(
        ["worker", "--pgvector-url", "postgresql://x@127.0.0.1:1/db", "--files-url", "ftp://h/x"]
    )
    assert code == 2
    assert "--files-url ftp://h/x" in capsys.readouterr().err


def test_open_collections_must_be_positive(capsys) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["serve", "--open-collections", "0"])
    assert exit.value.code == 2
    assert "argument --open-collections: must be a whole number of 1 or more, got '0'" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("command", ["serve", "worker"])
@pytest.mark.parametrize("grace", ["0", "-5", "nan"])
def test_the_sweep_grace_period_must_be_positive(capsys, command: str, grace: str) -> None:
    with pytest.raises(SystemExit) as exit:
        main([command, "--pgvector-url", "postgresql://x@/db", "--sweep-grace-seconds", grace])
    assert exit.value.code == 2
    assert f"argument --sweep-grace-seconds: must be a number above 0, got '{grace}'" in (
        capsys.readouterr().err
    )


def test_open_collections_is_refused_for_a_server_store(capsys) -> None:
    code = main(["worker", "--qdrant-url", "http://q:6333", "--open-collections", "5"])
    assert code == 2
    assert capsys.readouterr().err.endswith(
        "error: --open-collections applies only to Qdrant Edge on disk\n"
    )


async def test_the_service_store_keeps_open_what_it_is_told(tmp_path) -> None:
    from archivist.rag.knowledge.factories import open_store
    from archivist.rag.store.process import ProcessStore
    from archivist.service import ServiceSettings
    from archivist.service.runtime import store_spec
    from archivist.testing.store import DIMENSIONS, record

    def open_shards(pid: int) -> int:  # each open shard searches on a thread of its own
        tasks = Path(f"/proc/{pid}/task").iterdir()
        return sum((task / "comm").read_text().startswith("edge-search") for task in tasks)

    settings = ServiceSettings(home=tmp_path, open_collections=2)
    async with open_store(store_spec(settings)) as store:
        assert isinstance(store, ProcessStore)  # the engine's GIL is not the service's
        for name in "abc":
            await store.create_collection(name, DIMENSIONS)
            await store.insert(name, [record(name, 0)])
        assert store._process is not None
        for _ in range(500):  # a closed shard's threads end on their own
            if open_shards(store._process.pid) == 2:
                break
            await asyncio.sleep(0.01)
        assert open_shards(store._process.pid) == 2
