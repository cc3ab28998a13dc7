"""A real service per test module: SQLite + Qdrant Edge under a temporary home; the service's
databases (SQLite, PostgreSQL) and file stores (a directory, S3 on moto's server) to test
the parts on."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from postgres_server import postgres_server
from service_helpers import free_port, new_key, running_service
from sqlalchemy import Engine

from archivist.service import ServiceSettings
from archivist.service.storage.database import make_engine, metadata
from archivist.service.storage.file_store import FileStore, open_file_store
from system_programs import POSTGRES_SERVER, require


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
    require(POSTGRES_SERVER)
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


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server_module = pytest.importorskip("moto.server")
    pytest.importorskip("boto3")
    port = free_port()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, s3_endpoint: str, tmp_path: Path) -> Path:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3_endpoint,
        "ARCHIVIST_S3_STAGING": str(tmp_path / "staging"),
    }.items():
        monkeypatch.setenv(name, value)
    return tmp_path / "staging"


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> FileStore:
    if request.param == "local":
        opened = open_file_store(None, tmp_path / "files")
    else:
        request.getfixturevalue("aws")
        import boto3

        bucket = f"uploads-{uuid.uuid4().hex[:12]}"
        boto3.client("s3").create_bucket(Bucket=bucket)
        opened = open_file_store(f"s3://{bucket}/some/prefix", tmp_path / "unused")
    opened.prepare()
    return opened
