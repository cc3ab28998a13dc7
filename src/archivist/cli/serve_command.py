"""`archivist serve`: the knowledge service (HTTP API and web page) over `$ARCHIVIST_HOME`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from archivist._util.extras import EXTRAS, installed, require
from archivist.chunk_defaults import (
    PARSE_CPU_SECONDS,
    PARSE_MEMORY_MB,
    PARSE_WALL_SECONDS,
)
from archivist.cli.arguments import (
    CHUNKING_OPTIONS,
    CLIError,
    add_chunking_arguments,
    chunking_error,
)
from archivist.cli.home import archivist_home
from archivist.cli.ocr_options import add_ocr_arguments
from archivist.errors import InvalidArgumentError

if TYPE_CHECKING:
    import asyncio

    from archivist.service import ServiceSettings


def add_serve_command(commands: Any) -> None:
    """Register the `serve` sub-command."""
    cmd = commands.add_parser("serve", help="run the knowledge service (HTTP API and web page)")
    cmd.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    cmd.add_argument("--port", type=int, default=8731, help="port (default 8731)")
    add_database_argument(cmd)
    add_shared_store_arguments(cmd)
    cmd.add_argument(
        "--workers",
        type=int,
        default=2,
        help="documents indexed at once; 0 for an API-only replica beside `archivist worker`s",
    )
    add_indexing_arguments(cmd)
    cmd.add_argument(
        "--max-upload-mb", type=float, default=50.0, help="largest upload request in MiB"
    )
    cmd.add_argument(
        "--query-cache-seconds",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="answer an identical search of a knowledge base from memory for this long, "
        "unless it was written meanwhile (0: never)",
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
    cmd.add_argument(
        "--chat-base-url",
        default=None,
        help="an OpenAI-compatible chat server for answers (/v1/sessions); key from "
        "ARCHIVIST_CHAT_API_KEY (or OPENAI_API_KEY)",
    )
    cmd.add_argument(
        "--no-metrics",
        dest="metrics",
        action="store_false",
        help="do not serve Prometheus metrics at /metrics (served without a key by default)",
    )
    add_log_format_argument(cmd)
    cmd.add_argument("--chat-model", default=None, help="the chat server's model name")
    cmd.add_argument(
        "--chat-timeout",
        type=float,
        default=60.0,
        help="seconds to wait for the chat server's next piece of an answer (default 60)",
    )
    cmd.add_argument(
        "--chat-max-tokens",
        type=int,
        default=None,
        help="most tokens generated per model call (default: the chat server's limit)",
    )
    cmd.add_argument(
        "--chat-max-answer-kb",
        type=int,
        default=256,
        metavar="KIB",
        help="longest answer relayed and kept; a longer one is cut there and the chat "
        "server's stream closed (default 256)",
    )
    cmd.set_defaults(handler=run_serve, event_loop=service_event_loop)


def service_event_loop() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop `serve` and `worker` run on: uvloop's where it is installed (the
    `service` extra brings it, but on Windows), else asyncio's own (None)."""
    if not installed("uvloop"):
        return None
    import uvloop

    return uvloop.new_event_loop


def add_log_format_argument(cmd: argparse.ArgumentParser) -> None:
    """`--log-format text|json`, shared with `archivist worker`."""
    cmd.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="text (default) or json: one JSON object per line on stderr, with request ids",
    )


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


def add_indexing_arguments(cmd: argparse.ArgumentParser) -> None:
    """The options of how uploads are indexed, shared by `serve` and `worker`."""
    cmd.add_argument(
        "--index-threads", type=int, default=1, help="cores for embedding documents (default 1)"
    )
    cmd.add_argument(
        "--index-niceness",
        type=int,
        default=10,
        help="how much lower the CPU priority of parsing and embedding uploads is than that of "
        "answering requests, 0-19 (Linux; default 10)",
    )

    cmd.add_argument(
        "--parse-memory-mb",
        type=int,
        default=PARSE_MEMORY_MB,
        metavar="MIB",
        help="memory one upload's parsing may use, in a child process; a file that needs more "
        f"fails (default {PARSE_MEMORY_MB})",
    )
    cmd.add_argument(
        "--parse-cpu-seconds",
        type=int,
        default=PARSE_CPU_SECONDS,
        metavar="S",
        help=f"CPU time one upload's parsing may take (default {PARSE_CPU_SECONDS})",
    )
    cmd.add_argument(
        "--parse-wall-seconds",
        type=float,
        default=PARSE_WALL_SECONDS,
        metavar="S",
        help="time the indexer waits for one upload's chunks in all "
        f"(default {PARSE_WALL_SECONDS:g})",
    )
    add_ocr_arguments(cmd)


def indexing_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The ServiceSettings fields `add_indexing_arguments` set."""
    return {
        "index_threads": args.index_threads,
        "index_niceness": args.index_niceness,
        "parse_memory_mb": args.parse_memory_mb,
        "parse_cpu_seconds": args.parse_cpu_seconds,
        "parse_wall_seconds": args.parse_wall_seconds,
        "ocr": args.ocr,
        "ocr_languages": args.ocr_languages,
    }


def add_shared_store_arguments(cmd: argparse.ArgumentParser) -> None:
    """Where vectors and uploads live: shared by `serve` and `worker`."""
    stores = cmd.add_mutually_exclusive_group()
    stores.add_argument(
        "--qdrant-url",
        default=None,
        help="a Qdrant server or cluster (key from QDRANT_API_KEY); default: Qdrant Edge on disk",
    )
    stores.add_argument(
        "--pgvector-url",
        default=os.environ.get("ARCHIVIST_PGVECTOR_URL"),
        metavar="URL",
        help="PostgreSQL with pgvector for the vectors, postgresql://USER@HOST:PORT/DB "
        "(or ARCHIVIST_PGVECTOR_URL); may be the --database database",
    )
    cmd.add_argument(
        "--open-collections",
        type=int,
        default=None,
        metavar="N",
        help="Qdrant Edge knowledge bases kept open at once; past it the least recently used "
        "close and load again on use (default 256; more may need a higher vm.max_map_count)",
    )
    cmd.add_argument(
        "--files-url",
        default=os.environ.get("ARCHIVIST_FILES_URL"),
        metavar="URL",
        help="where uploads are kept: a directory or s3://BUCKET/PREFIX (AWS_* variables, "
        "AWS_ENDPOINT_URL for S3-compatible stores; or ARCHIVIST_FILES_URL); "
        "default: $ARCHIVIST_HOME/service/files",
    )
    cmd.add_argument(
        "--sweep-grace-seconds",
        type=float,
        default=3600.0,
        metavar="S",
        help="remove what a stopped process left behind (an unfinished upload's files, a "
        "staged copy) once it is this old (default 3600)",
    )


def shared_store_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The `ServiceSettings` fields of `add_shared_store_arguments`."""
    if not args.sweep_grace_seconds > 0:
        raise CLIError(f"--sweep-grace-seconds {args.sweep_grace_seconds:g}: give a number above 0")
    return {
        "qdrant_url": args.qdrant_url,
        "qdrant_api_key": os.environ.get("QDRANT_API_KEY"),
        "pgvector_url": args.pgvector_url,
        "open_collections": args.open_collections,
        "files_url": args.files_url,
        "sweep_grace_seconds": args.sweep_grace_seconds,
    }


def require_service(command: str) -> None:
    """The service's packages are installed, else one line naming the `service` extra."""
    for module in EXTRAS["service"]:
        require("service", module, f"archivist {command}")


def service_settings(args: argparse.Namespace, **overrides: Any) -> ServiceSettings:
    """`ServiceSettings` from the command line; bad values are reported as a CLIError."""
    from pydantic import ValidationError

    from archivist.service import ServiceSettings

    try:
        return ServiceSettings(home=archivist_home(), database_url=args.database, **overrides)
    except ValidationError as exc:
        for error in exc.errors():
            cause = error.get("ctx", {}).get("error")
            if isinstance(cause, InvalidArgumentError) and cause.argument in CHUNKING_OPTIONS:
                raise chunking_error(cause) from None
        problems = "; ".join(
            # A check across settings has no location, and pydantic prefixes its message.
            (f"{'.'.join(str(p) for p in e['loc'])}: " if e["loc"] else "")
            + e["msg"].removeprefix("Value error, ")
            for e in exc.errors()
        )
        raise CLIError(problems) from None


async def run_serve(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    require_service("serve")
    import asyncio

    import uvicorn

    from archivist.service.app import opened_app
    from archivist.service.collector import keep_imports_frozen
    from archivist.service.guards.slow_clients import uvicorn_options
    from archivist.service.listener import PreboundServer, listening_socket

    if not 0 < args.port < 65536:
        raise CLIError(f"--port {args.port}: give a port between 1 and 65535")
    settings = service_settings(
        args,
        **shared_store_settings(args),
        workers=args.workers,
        **indexing_settings(args),
        max_upload_bytes=max(1, int(args.max_upload_mb * 1024 * 1024)),
        chunk_size=args.chunk_size,
        overlap=args.overlap,
        query_cache_seconds=args.query_cache_seconds,
        chat_base_url=args.chat_base_url,
        chat_model=args.chat_model,
        chat_api_key=os.environ.get("ARCHIVIST_CHAT_API_KEY") or os.environ.get("OPENAI_API_KEY"),
        chat_timeout=args.chat_timeout,
        chat_max_tokens=args.chat_max_tokens,
        chat_max_answer_bytes=args.chat_max_answer_kb * 1024,
        rate_per_second=args.rate,
        metrics=args.metrics,
        **read_quotas(args.quotas),
    )
    if settings.workers == 0 and not (settings.pgvector_url or settings.qdrant_url):
        raise CLIError(
            "--workers 0 leaves indexing to `archivist worker` processes, which need vectors "
            "they can share: give --pgvector-url or --qdrant-url"
        )
    log_options: dict[str, Any] = {}
    if args.log_format == "json":
        import logging.config

        from archivist.service.telemetry.json_logs import json_logging_config

        log_options["log_config"] = json_logging_config(getattr(args, "debug", False))
        logging.config.dictConfig(log_options["log_config"])  # the startup lines too
    else:
        show_startup_choices()
    # Worker threads parse, chunk and count while the event loop answers requests: a
    # shorter switch interval than CPython's 5 ms hands the GIL back to the loop sooner
    # (benchmarks/bench_service_security.py, latency part).
    from archivist._util.thread_priority import answer_sooner

    answer_sooner()
    # Full garbage collections skip the imported code (archivist/service/collector.py).
    freezer = asyncio.create_task(keep_imports_frozen())
    listener = listening_socket(args.host, args.port)
    try:
        # Opened before the server starts: a setting that cannot work (an engine named but
        # not installed, a store in use) ends the command with its one-line error.
        async with opened_app(settings) as app:
            config = uvicorn.Config(
                app,
                host=args.host,
                port=args.port,
                log_level="info",
                access_log=False,  # raw paths and query strings; JSON logs carry route templates
                **log_options,
                **uvicorn_options(settings),
            )
            await PreboundServer(config).serve(sockets=[listener])
    finally:
        freezer.cancel()
        listener.close()
    return 0


def show_startup_choices() -> None:
    """Print the service's startup lines (what "auto" defaults chose) in the plain-text log."""
    import logging

    from archivist.service.runtime import STARTUP_LOGGER

    logging.getLogger(STARTUP_LOGGER).setLevel(logging.INFO)
