"""Running the real service on 127.0.0.1 for tests: in a thread, or as `archivist serve`."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from archivist.service import ServiceSettings, create_app
from archivist.service.guards.slow_clients import uvicorn_options
from archivist.service.storage.database import make_engine
from archivist.service.storage.keys import create_key
from child_process import wait_ready

FINAL = {"ready", "failed"}
CLEARED_ENVIRONMENT = ("ARCHIVIST_DATABASE_URL", "ARCHIVIST_PGVECTOR_URL", "ARCHIVIST_FILES_URL")
"""Variables of the test's own environment kept from children given an environment."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def new_key(settings: ServiceSettings, tenant: str) -> str:
    engine = make_engine(settings.resolved_database_url)
    try:
        return create_key(engine, tenant).key
    finally:
        engine.dispose()


@contextmanager
def running_service(settings: ServiceSettings, **app_kwargs: Any) -> Iterator[str]:
    """`create_app(settings)` served by uvicorn in a thread; yields its base URL."""
    port = free_port()
    config = uvicorn.Config(
        create_app(settings, **app_kwargs),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        **uvicorn_options(settings),
    )
    server = uvicorn.Server(config)
    failure: list[BaseException] = []

    def serve() -> None:  # its failure is raised from the test below, not lost in the thread
        try:
            server.run()
        except BaseException as error:
            failure.append(error)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive():  # why: uvicorn's log, and the exception it ended with
            cause = failure[0] if failure else None
            raise RuntimeError("the service stopped before it started") from cause
        if time.monotonic() > deadline:
            raise TimeoutError("the service did not start within 60 s")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(60)


def client(base_url: str, key: str | None = None, timeout: float = 60) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=base_url, headers=headers, timeout=timeout)


def wait_final(
    http: httpx.Client, kb: str, ids: list[str] | None = None, timeout: float = 300
) -> list[dict[str, Any]]:
    """Poll the documents of `kb` until every one (or every id in `ids`) is ready or failed."""
    deadline = time.monotonic() + timeout
    pause = 0.02  # doubled up to 0.2 s: a quick job is seen at once, a long one polled lightly
    while True:
        response = http.get(f"/v1/knowledge-bases/{kb}/documents")
        response.raise_for_status()
        items: list[dict[str, Any]] = response.json()["items"]
        watched = [d for d in items if ids is None or d["id"] in ids]
        if all(d["status"] in FINAL for d in watched) and (ids is None or len(watched) == len(ids)):
            return watched
        if time.monotonic() > deadline:
            raise TimeoutError(f"not final after {timeout}s: {watched}")
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


class ServeProcess:
    """`archivist serve` as a child process over `home`; `kill()` is SIGKILL, and `start()`
    again restarts it on its port. `env` is added to the test's environment (without the
    test's own ARCHIVIST_* store settings when it is given)."""

    def __init__(
        self, home: Path, port: int, *extra: str, env: dict[str, str] | None = None
    ) -> None:
        self.home, self.port, self.extra, self.env = home, port, extra, env
        self.process: subprocess.Popen[bytes] | None = None
        self.log = home / "serve.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, timeout: float = 90) -> None:
        """Start it and wait until it answers /healthz; ChildExited (its status and the end
        of its output) as soon as it exits instead."""
        self.home.mkdir(parents=True, exist_ok=True)
        exe = shutil.which("archivist", path=str(Path(sys.executable).parent)) or "archivist"
        base = dict(os.environ)
        if self.env is not None:
            base = {k: v for k, v in base.items() if k not in CLEARED_ENVIRONMENT}
        env = {**base, **(self.env or {}), "ARCHIVIST_HOME": str(self.home)}
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [exe, "serve", "--port", str(self.port), *self.extra],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_ready(self.process, "archivist serve", self._healthy, self.log, timeout)

    def _healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
