"""API keys: each belongs to one tenant; only a sha256 of the key is stored.

Keys are 256-bit random tokens, so a plain sha256 is enough to make a stolen table useless
(no password-style stretching is needed for secrets nobody can guess).

A key found active is remembered for `KEY_CACHE_SECONDS`, so a busy client costs one database
lookup per interval instead of one per request. Revoking a key forgets it at once in the
revoking process; other processes (the service, while `archivist keys revoke` runs beside
it, or other replicas) stop accepting it within `KEY_CACHE_SECONDS`. Unknown keys are never
remembered, so guessing cannot fill the cache.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Engine, insert, select, update

from archivist.errors import InvalidArgumentError
from archivist.service.storage.database import api_keys, reading, writing
from archivist.service.storage.recent import RecentlyFound

KEY_PREFIX = "ak"
KEY_CACHE_SECONDS = 2.0
KEY_CACHE_SIZE = 4096
TENANT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class KeyInfo(BaseModel):
    """One key as `keys list` shows it: never the key itself."""

    model_config = ConfigDict(extra="forbid")

    id: str
    tenant: str
    created_at: float
    revoked_at: float | None


class NewKey(BaseModel):
    """A freshly created key: `key` is shown once and never stored."""

    model_config = ConfigDict(extra="forbid")

    id: str
    tenant: str
    key: str


def hash_key(key: str) -> str:
    """The stored form of a key."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def check_tenant(tenant: str) -> str:
    """A tenant name: letters, digits, `_ . -`, up to 64 characters."""
    if not isinstance(tenant, str) or not TENANT_PATTERN.match(tenant):
        raise InvalidArgumentError(
            f"invalid tenant name {tenant!r} (letters, digits, _ . -; max 64)", argument="tenant"
        )
    return tenant


def create_key(engine: Engine, tenant: str) -> NewKey:
    """Make a key for `tenant`; the returned `key` is the only copy."""
    check_tenant(tenant)
    key_id = secrets.token_hex(6)
    key = f"{KEY_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
    with writing(engine) as db:
        db.execute(
            insert(api_keys).values(
                id=key_id, tenant=tenant, key_hash=hash_key(key), created_at=time.time()
            )
        )
    return NewKey(id=key_id, tenant=tenant, key=key)


def list_keys(engine: Engine) -> list[KeyInfo]:
    """Every key, oldest first."""
    with reading(engine) as db:
        rows = db.execute(
            select(
                api_keys.c.id, api_keys.c.tenant, api_keys.c.created_at, api_keys.c.revoked_at
            ).order_by(api_keys.c.created_at)
        ).all()
    return [KeyInfo(**row._asdict()) for row in rows]


def revoke_key(engine: Engine, key_id: str) -> bool:
    """Revoke key `key_id`; False when no active key has that id."""
    with writing(engine) as db:
        result = db.execute(
            update(api_keys)
            .where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
            .values(revoked_at=time.time())
        )
    _forget(engine, key_id)
    return bool(result.rowcount)


def tenant_for_key(engine: Engine, key: str) -> str | None:
    """The tenant of an active `key`, or None (from the cache when it was found recently)."""
    digest = hash_key(key)
    tenant = _cached(engine, digest)
    if tenant is not None:
        return tenant
    with reading(engine) as db:
        row = db.execute(
            select(api_keys.c.id, api_keys.c.tenant).where(
                api_keys.c.key_hash == digest, api_keys.c.revoked_at.is_(None)
            )
        ).one_or_none()
    if row is None:
        return None
    _found.put(engine, digest, (row.id, row.tenant))
    return str(row.tenant)


def cached_tenant_for_key(engine: Engine, key: str) -> str | None:
    """The tenant of `key` if it was found active within `KEY_CACHE_SECONDS`, else None
    (then ask `tenant_for_key`); never touches the database, so it is safe on the event loop."""
    return _cached(engine, hash_key(key))


# Key hash -> (key id, tenant) of keys recently found active.
_found: RecentlyFound[str, tuple[str, str]] = RecentlyFound(KEY_CACHE_SECONDS, KEY_CACHE_SIZE)


def _cached(engine: Engine, digest: str) -> str | None:
    entry = _found.get(engine, digest)
    return None if entry is None else entry[1]


def _forget(engine: Engine, key_id: str) -> None:
    _found.forget(engine, lambda _digest, entry: entry[0] == key_id)
