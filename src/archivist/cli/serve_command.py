"""`archivist serve`: the knowledge service (HTTP API and web page) over `$ARCHIVIST_HOME`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from archivist._util.extras import EXTRAS, installed, require
from archivist.cli.arguments import (
    CHUNKING_OPTIONS,
    CLIError,
    add_chunking_arguments,
    add_option,
    chunking_error,
)
from archivist.cli.home import archivist_home
from archivist.cli.ocr_options import add_ocr_arguments
from archivist.embedding.registry import list_embedding_models
from archivist.errors import InvalidArgumentError
from archivist.options import (
    CHAT_BASE_URL,
    CHAT_MAX_ANSWER,
    CHAT_MAX_TOKENS,
    CHAT_MODEL,
    CHAT_TIMEOUT,
    DATABASE,
    EMBEDDING,
    FILES_URL,
    INDEX_NICENESS,
    INDEX_THREADS,
    MAX_UPLOAD,
    OPEN_COLLECTIONS,
    PARSE_CPU,
    PARSE_MEMORY,
    PARSE_WALL,
    PGVECTOR_URL,
    QDRANT_URL,
    QUERY_CACHE_SECONDS,
    RATE,
    SERVICE_OPTIONS,
    SWEEP_GRACE_SECONDS,
    WORKERS,
)

if TYPE_CHECKING:
    import asyncio

    from archivist.service import ServiceSettings


EMBEDDING_HELP = (
    "embedding model of a knowledge base created without one (known: "
    f"{', '.join(list_embedding_models())})"
)


def add_serve_command(commands: Any) -> None:
    """Register the `serve` sub-command."""
    cmd = commands.add_parser("serve", help="run the knowledge service (HTTP API and web page)")
    cmd.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    cmd.add_argument("--port", type=int, default=8731, help="port (default 8731)")
    add_database_argument(cmd)
    add_shared_store_arguments(cmd)
    add_option(cmd, WORKERS)
    add_indexing_arguments(cmd)
    add_option(cmd, MAX_UPLOAD)
    add_option(cmd, QUERY_CACHE_SECONDS)
    cmd.add_argument(
        "--quotas",
        default=None,
        metavar="FILE",
        help='JSON quotas: {"default": {"knowledge_bases": N, "documents": N, '
        '"storage_bytes": N}, "tenants": {"NAME": {...}}} (default: 100 KBs, 10,000 '
        "documents, 5 GiB per tenant)",
    )
    add_option(cmd, RATE)
    add_chunking_arguments(cmd, from_kb=False, service=True)
    add_option(cmd, CHAT_BASE_URL)
    cmd.add_argument(
        "--no-metrics",
        dest="metrics",
        action="store_false",
        help="do not serve Prometheus metrics at /metrics (served without a key by default)",
    )
    add_log_format_argument(cmd)
    add_option(cmd, CHAT_MODEL)
    add_option(cmd, CHAT_TIMEOUT)
    add_option(cmd, CHAT_MAX_TOKENS)
    add_option(cmd, CHAT_MAX_ANSWER)
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
    add_option(cmd, DATABASE)


def add_indexing_arguments(cmd: argparse.ArgumentParser) -> None:
    """The options of how uploads are indexed, shared by `serve` and `worker`."""
    add_option(cmd, EMBEDDING, help=EMBEDDING_HELP)
    for option in (INDEX_THREADS, INDEX_NICENESS, PARSE_MEMORY, PARSE_CPU, PARSE_WALL):
        add_option(cmd, option)
    add_ocr_arguments(cmd)


def indexing_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The ServiceSettings fields `add_indexing_arguments` set."""
    return {
        "embedding_model": args.embedding,
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
    add_option(stores, QDRANT_URL)
    add_option(stores, PGVECTOR_URL)
    for option in (OPEN_COLLECTIONS, FILES_URL, SWEEP_GRACE_SECONDS):
        add_option(cmd, option)


def shared_store_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The `ServiceSettings` fields of `add_shared_store_arguments`."""
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
        flags = {option.field: option.flag for option in SERVICE_OPTIONS}
        problems = "; ".join(
            # A check across settings has no location, and pydantic prefixes its message.
            (
                f"{flags.get(str(e['loc'][0]), '.'.join(str(p) for p in e['loc']))}: "
                if e["loc"]
                else ""
            )
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
        max_upload_bytes=MAX_UPLOAD.to_setting(args.max_upload_mb),
        chunk_size=args.chunk_size,
        overlap=args.overlap,
        query_cache_seconds=args.query_cache_seconds,
        chat_base_url=args.chat_base_url,
        chat_model=args.chat_model,
        chat_api_key=os.environ.get("ARCHIVIST_CHAT_API_KEY") or os.environ.get("OPENAI_API_KEY"),
        chat_timeout=args.chat_timeout,
        chat_max_tokens=args.chat_max_tokens,
        chat_max_answer_bytes=CHAT_MAX_ANSWER.to_setting(args.chat_max_answer_kb),
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
    # (benchmarks/service/bench_service_security.py, latency part).
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
