"""`archivist keys` and `archivist serve` argument handling: clear errors, never tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archivist.cli.main import main
from archivist.service.database import make_engine
from archivist.service.keys import hash_key, tenant_for_key


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARCHIVIST_HOME", str(tmp_path))
    monkeypatch.delenv("ARCHIVIST_DATABASE_URL", raising=False)
    return tmp_path


def test_create_list_revoke(home: Path, capsys) -> None:
    assert main(["keys", "create", "--tenant", "acme"]) == 0
    key = capsys.readouterr().out.strip()
    assert key.startswith("ak_")
    assert main(["keys", "list", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["tenant"] == "acme" and listed["revoked_at"] is None
    assert listed["id"] in key
    database = home / "service" / "service.db"
    raw = database.read_bytes()
    assert key.encode() not in raw and hash_key(key).encode() in raw  # only the hash is stored
    engine = make_engine(f"sqlite:///{database}")
    assert tenant_for_key(engine, key) == "acme"

    assert main(["keys", "revoke", listed["id"]]) == 0
    capsys.readouterr()
    assert tenant_for_key(engine, key) is None
    engine.dispose()
    assert main(["keys", "revoke", listed["id"]]) == 2
    assert "no active key" in capsys.readouterr().err
    assert main(["keys", "list"]) == 0
    assert "acme" in capsys.readouterr().out


@pytest.mark.parametrize("tenant", ["../x", "", "a b", "x" * 65])
def test_bad_tenant_is_a_clear_error(tenant: str, capsys) -> None:
    assert main(["keys", "create", "--tenant", tenant]) == 2
    err = capsys.readouterr().err
    assert "invalid tenant name" in err and "Traceback" not in err


def test_bad_database_url_is_a_clear_error(capsys) -> None:
    assert main(["keys", "list", "--database", "mysql://nobody@127.0.0.1/x"]) == 2
    assert "sqlite" in capsys.readouterr().err


def test_serve_rejects_bad_settings(capsys) -> None:
    assert main(["serve", "--port", "70000"]) == 2
    assert "--port" in capsys.readouterr().err
    assert main(["serve", "--workers", "0"]) == 2
    assert "workers" in capsys.readouterr().err
    assert main(["serve", "--chunk-size", "64", "--overlap", "64"]) == 2
    assert "overlap" in capsys.readouterr().err


def test_serve_rejects_bad_chat_settings(capsys) -> None:
    assert main(["serve", "--chat-base-url", "http://127.0.0.1:1/v1", "--chat-timeout", "0"]) == 2
    assert "chat_timeout" in capsys.readouterr().err
    assert main(["serve", "--chat-max-tokens", "-3"]) == 2
    err = capsys.readouterr().err
    assert "chat_max_tokens" in err and "Traceback" not in err
