"""`archivist keys` and `archivist serve` argument handling: clear errors, never tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archivist.cli.main import main
from archivist.service.storage.database import make_engine
from archivist.service.storage.keys import hash_key, tenant_for_key


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
    assert "argument --query-cache-seconds" in refused(capsys, "--query-cache-seconds", "-1")


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """What `archivist serve ARGV` says as its parser refuses a value (exit status 2)."""
    with pytest.raises(SystemExit) as exit:
        main(["serve", *argv])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_a_found_key_is_remembered_briefly_and_forgotten_on_revoke(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from archivist.service.storage import keys

    assert main(["keys", "create", "--tenant", "acme"]) == 0
    key = capsys.readouterr().out.strip()
    assert main(["keys", "create", "--tenant", "other"]) == 0
    other_key = capsys.readouterr().out.strip()
    engine = make_engine(f"sqlite:///{home / 'service' / 'service.db'}")
    assert keys.cached_tenant_for_key(engine, key) is None  # never asked yet
    assert keys.tenant_for_key(engine, key) == "acme"
    assert keys.tenant_for_key(engine, other_key) == "other"
    # Now served from memory: the database is not asked again.
    queries: list[str] = []
    with monkeypatch.context() as patch:
        patch.setattr(keys, "reading", lambda engine: queries.append("read"))
        assert keys.tenant_for_key(engine, key) == "acme"
        assert keys.cached_tenant_for_key(engine, key) == "acme"
    assert queries == []
    # Revoking (here through the CLI's own engine on the same database) forgets that key only.
    key_id = key.split("_")[1]
    assert main(["keys", "revoke", key_id]) == 0
    assert keys.cached_tenant_for_key(engine, key) is None
    assert keys.tenant_for_key(engine, key) is None
    assert keys.cached_tenant_for_key(engine, other_key) == "other"
    # A wrong key is never remembered.
    assert keys.tenant_for_key(engine, key + "x") is None
    assert keys.cached_tenant_for_key(engine, key + "x") is None
    engine.dispose()


def test_a_key_revoked_elsewhere_stops_working_within_the_cache_interval(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another process's revocation cannot reach this cache: its entries expire instead."""
    import time

    from sqlalchemy import update

    from archivist.service.storage import keys
    from archivist.service.storage.database import api_keys, writing

    assert main(["keys", "create", "--tenant", "acme"]) == 0
    key = capsys.readouterr().out.strip()
    engine = make_engine(f"sqlite:///{home / 'service' / 'service.db'}")
    assert keys.tenant_for_key(engine, key) == "acme"
    with writing(engine) as db:  # what `archivist keys revoke` in another process does
        db.execute(update(api_keys).values(revoked_at=time.time()))
    assert keys.tenant_for_key(engine, key) == "acme"  # still remembered
    time.sleep(keys.KEY_CACHE_SECONDS + 0.2)
    assert keys.tenant_for_key(engine, key) is None
    engine.dispose()


def test_serve_rejects_bad_chat_settings(capsys) -> None:
    err = refused(capsys, "--chat-base-url", "http://127.0.0.1:1/v1", "--chat-timeout", "0")
    assert "argument --chat-timeout: must be a number above 0" in err
    assert "argument --chat-max-tokens" in refused(capsys, "--chat-max-tokens", "-3")
