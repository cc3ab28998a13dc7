"""A real service per test module: SQLite + Qdrant Edge under a temporary home."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from postgres_server import postgres_bin, postgres_server
from service_helpers import new_key, running_service
from sqlalchemy import Engine

from archivist.service import ServiceSettings
from archivist.service.storage.database import make_engine, metadata


@dataclass
class Service:
    url: str
    settings: ServiceSettings
    keys: dict[str, str]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    home: Path = tmp_path_factory.mktemp("service-home")
    # The shared service is hammered by randomised tests faster than a client would be: its
    # per-key rate is raised so they test what they name (the rate itself: test_fairness.py).
    settings = ServiceSettings(
        home=home, max_upload_bytes=2 * 1024 * 1024, rate_per_second=1000, rate_burst=1000
    )
    keys = {tenant: new_key(settings, tenant) for tenant in ("acme", "globex", "initech")}
    with running_service(settings) as url:
        yield Service(url, settings, keys)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throw-away PostgreSQL server on 127.0.0.1 for the whole session."""
    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed here (apt-get install -y postgresql)")
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """The service's database with its tables: SQLite in `tmp_path`, or PostgreSQL."""
    if request.param == "sqlite":
        made = make_engine(f"sqlite:///{tmp_path / 'service.db'}")
    else:
        made = make_engine(request.getfixturevalue("postgres_url"))
    yield made
    metadata.drop_all(made)
    made.dispose()
