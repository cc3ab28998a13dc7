"""`archivist serve`: the knowledge service (HTTP API and web page) over `$ARCHIVIST_HOME`."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from archivist.cli.home import archivist_home
from archivist.cli.session import CLIError, add_chunking_arguments

if TYPE_CHECKING:
    from archivist.service import ServiceSettings


def add_serve_command(commands: Any) -> None:
    """Register the `serve` sub-command."""
    cmd = commands.add_parser("serve", help="run the knowledge service (HTTP API and web page)")
    cmd.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    cmd.add_argument("--port", type=int, default=8731, help="port (default 8731)")
    add_database_argument(cmd)
    cmd.add_argument(
        "--qdrant-url",
        default=None,
        help="a Qdrant server or cluster (key from QDRANT_API_KEY); default: Qdrant Edge on disk",
    )
    cmd.add_argument("--workers", type=int, default=2, help="documents indexed at once")
    cmd.add_argument(
        "--index-threads", type=int, default=1, help="cores for embedding documents (default 1)"
    )
    cmd.add_argument(
        "--max-upload-mb", type=float, default=50.0, help="largest upload request in MiB"
    )
    cmd.add_argument(
        "--quotas",
        default=None,
        metavar="FILE",
        help='JSON quotas: {"default": {"knowledge_bases": N, "documents": N, '
        '"storage_bytes": N}, "tenants": {"NAME": {...}}} (default: 100 KBs, 10,000 '
        "documents, 5 GiB per tenant)",
    )
    cmd.add_argument(
        "--rate", type=float, default=50.0, help="requests per second per API key (default 50)"
    )
    add_chunking_arguments(cmd, from_kb=False)
    cmd.set_defaults(handler=run_serve)


def read_quotas(path: str | None) -> dict[str, Any]:
    """`quota` and `tenant_quotas` settings from a `--quotas` JSON file."""
    if path is None:
        return {}
    import json

    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise CLIError(f"--quotas {path}: {exc}") from None
    if not isinstance(data, dict) or set(data) - {"default", "tenants"}:
        raise CLIError(f'--quotas {path}: expected {{"default": {{...}}, "tenants": {{...}}}}')
    settings: dict[str, Any] = {"tenant_quotas": data.get("tenants", {})}
    if "default" in data:
        settings["quota"] = data["default"]
    return settings


def add_database_argument(cmd: argparse.ArgumentParser) -> None:
    """`--database URL`, shared with `archivist keys`."""
    cmd.add_argument(
        "--database",
        default=os.environ.get("ARCHIVIST_DATABASE_URL"),
        help="postgresql://USER@HOST:PORT/DB for several replicas (or ARCHIVIST_DATABASE_URL); "
        "default: SQLite under $ARCHIVIST_HOME",
    )


def service_settings(args: argparse.Namespace, **overrides: Any) -> ServiceSettings:
    """`ServiceSettings` from the command line; bad values are reported as a CLIError."""
    from pydantic import ValidationError

    from archivist.service import ServiceSettings

    try:
        return ServiceSettings(home=archivist_home(), database_url=args.database, **overrides)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise CLIError(problems) from None


async def run_serve(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    import uvicorn

    from archivist.service import create_app
    from archivist.service.slow_clients import uvicorn_options

    if not 0 < args.port < 65536:
        raise CLIError(f"--port {args.port}: give a port between 1 and 65535")
    settings = service_settings(
        args,
        qdrant_url=args.qdrant_url,
        qdrant_api_key=os.environ.get("QDRANT_API_KEY"),
        workers=args.workers,
        index_threads=args.index_threads,
        max_upload_bytes=max(1, int(args.max_upload_mb * 1024 * 1024)),
        chunk_size=args.chunk_size,
        overlap=args.overlap,
        rate_per_second=args.rate,
        **read_quotas(args.quotas),
    )
    config = uvicorn.Config(
        create_app(settings),
        host=args.host,
        port=args.port,
        log_level="info",
        access_log=False,
        **uvicorn_options(settings),
    )
    await uvicorn.Server(config).serve()
    return 0
