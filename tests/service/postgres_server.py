"""A throw-away PostgreSQL server on 127.0.0.1 for tests, from Debian's `postgresql` package
(`system_programs.POSTGRES_SERVER`: a test that starts one needs it)."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from service_helpers import free_port

from child_process import tail
from system_programs import postgres_bin


def _as_postgres(command: list[str]) -> list[str]:
    """Run as the `postgres` user when we are root (the server refuses to run as root)."""
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


def _reachable_by_others(folder: Path) -> None:
    """Let other users pass through `folder`'s parents (o+x, not o+r), as the `postgres`
    user must to reach its data folder: `make test` keeps temporary files in a folder only
    its owner may enter."""
    for parent in folder.parents:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            parent.chmod(mode | stat.S_IXOTH)


def _run(command: list[str]) -> None:
    """Run `command`; a failure names it and shows the end of its error output."""
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        last = "\n".join(done.stderr.splitlines()[-40:])
        raise RuntimeError(f"{' '.join(command)} exited with status {done.returncode}:\n{last}")


@contextmanager
def postgres_server() -> Iterator[str]:
    """initdb + pg_ctl start in a temporary folder; yields a `postgresql://` URL; stops after."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise FileNotFoundError("PostgreSQL binaries (initdb, pg_ctl) are not installed")
    root = Path(tempfile.mkdtemp(prefix="archivist-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(root, user.pw_uid, user.pw_gid)
        _reachable_by_others(root)
    port = free_port()
    _run(_as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]))
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    log = root / "log"
    try:
        # -w: pg_ctl waits (up to a minute) until the server accepts connections, or fails
        # as soon as the server has exited.
        start = [str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log)]
        _run(_as_postgres([*start, "-w", "start"]))
    except RuntimeError as error:
        raise RuntimeError(f"{error}\nthe server's log:\n{tail(log)}") from None
    try:
        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        _wait_ready(url)
        yield url
    finally:
        subprocess.run(
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(url: str) -> None:
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        try:
            with psycopg.connect(url, connect_timeout=2):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def fresh_database(url: str, name: str) -> str:
    """Create (or recreate) database `name` on the server of `url`; returns its URL."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + f"/{name}"
