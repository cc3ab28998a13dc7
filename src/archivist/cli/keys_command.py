"""`archivist keys create|list|revoke`: the API keys of the knowledge service."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

from archivist.cli.arguments import CLIError
from archivist.cli.serve_command import (
    add_database_argument,
    require_service,
    service_settings,
)


def add_keys_command(commands: Any) -> None:
    """Register `keys` with its `create`, `list` and `revoke` actions."""
    cmd = commands.add_parser("keys", help="manage the service's API keys")
    actions = cmd.add_subparsers(dest="keys_action", required=True)
    create = actions.add_parser("create", help="make a key for a tenant (shown once)")
    create.add_argument("--tenant", required=True, help="tenant the key acts for")
    listing = actions.add_parser("list", help="list keys (never the keys themselves)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    revoke = actions.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("key_id", metavar="ID")
    for action in (create, listing, revoke):
        add_database_argument(action)
    cmd.set_defaults(handler=run_keys)


async def run_keys(args: argparse.Namespace) -> int:
    """Run the chosen action against the service's database."""
    require_service("keys")
    import asyncio

    return await asyncio.to_thread(_run, args)


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table
    from sqlalchemy.exc import SQLAlchemyError

    from archivist.service.storage.database import make_engine
    from archivist.service.storage.keys import create_key, list_keys, revoke_key

    settings = service_settings(args)
    try:
        engine = make_engine(settings.resolved_database_url)
    except SQLAlchemyError as exc:
        raise CLIError(f"cannot open the database: {exc.__class__.__name__}: {exc}") from None
    try:
        if args.keys_action == "create":
            new = create_key(engine, args.tenant)
            print(new.key)
            Console(stderr=True).print(
                f"key {new.id} for tenant {new.tenant!r}: store it now, it is not shown again"
            )
            return 0
        if args.keys_action == "revoke":
            if not revoke_key(engine, args.key_id):
                raise CLIError(f"no active key with id {args.key_id!r} (see: archivist keys list)")
            print(f"revoked {args.key_id}")
            return 0
        keys = list_keys(engine)
        if args.json:
            print(json.dumps([k.model_dump() for k in keys]))
            return 0
        table = Table(title=f"{len(keys)} key(s)")
        for column in ("id", "tenant", "created", "revoked"):
            table.add_column(column)
        for info in keys:
            table.add_row(info.id, info.tenant, _when(info.created_at), _when(info.revoked_at))
        Console().print(table)
        return 0
    finally:
        engine.dispose()


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
