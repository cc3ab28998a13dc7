"""`archivist worker`: index queued uploads in a process of its own, beside API replicas."""

from __future__ import annotations

import argparse
from typing import Any

from archivist.cli.serve_command import (
    add_database_argument,
    add_indexing_arguments,
    add_log_format_argument,
    add_shared_store_arguments,
    indexing_settings,
    require_service,
    service_settings,
    shared_store_settings,
)
from archivist.cli.session import CLIError, add_chunking_arguments


def add_worker_command(commands: Any) -> None:
    """Register the `worker` sub-command."""
    cmd = commands.add_parser(
        "worker",
        help="index queued uploads for `archivist serve` replicas (shared database and stores)",
    )
    add_database_argument(cmd)
    add_shared_store_arguments(cmd)
    cmd.add_argument("--workers", type=int, default=2, help="documents indexed at once")
    add_indexing_arguments(cmd)
    cmd.add_argument(
        "--poll-seconds",
        type=float,
        default=1.0,
        help="how often an idle worker looks for new jobs",
    )
    cmd.add_argument(
        "--lease-seconds",
        type=float,
        default=60.0,
        help="a job this worker stops renewing (it died) goes to another after this long",
    )
    cmd.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics (indexing, embedding, queue) at "
        "http://METRICS_HOST:PORT/metrics (default: none)",
    )
    cmd.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="address of the --metrics-port listener (default 127.0.0.1)",
    )
    add_log_format_argument(cmd)
    add_chunking_arguments(cmd, from_kb=False)
    cmd.set_defaults(handler=run_worker)


async def run_worker(args: argparse.Namespace) -> int:
    """Take jobs from the shared queue until SIGTERM or Ctrl-C; held jobs go back to the queue
    when their leases lapse."""
    require_service("worker")
    from archivist.service.runtime import running_service

    if args.workers < 1:
        raise CLIError(f"--workers {args.workers}: a worker indexes at least 1 document at once")
    if args.metrics_port is not None and not 0 < args.metrics_port < 65536:
        raise CLIError(f"--metrics-port {args.metrics_port}: give a port between 1 and 65535")
    settings = service_settings(
        args,
        **shared_store_settings(args),
        workers=args.workers,
        **indexing_settings(args),
        poll_seconds=args.poll_seconds,
        lease_seconds=args.lease_seconds,
        chunk_size=args.chunk_size,
        overlap=args.overlap,
    )
    if not (settings.qdrant_url or settings.pgvector_url):
        raise CLIError(
            "a worker shares the vectors with the API replicas: give --pgvector-url or "
            "--qdrant-url (Qdrant Edge on disk belongs to one process)"
        )
    import asyncio
    import contextlib
    import logging
    import signal

    from archivist.service.telemetry.metrics import ServiceMetrics, serve_metrics

    if args.log_format == "json":
        import logging.config

        from archivist.service.telemetry.json_logs import json_logging_config

        logging.config.dictConfig(json_logging_config(getattr(args, "debug", False)))
    metrics = ServiceMetrics() if args.metrics_port is not None else None
    stop_metrics = None
    if metrics is not None:  # before the model loads: a taken port fails at once
        try:
            stop_metrics = serve_metrics(metrics, args.metrics_host, args.metrics_port)
        except OSError as exc:
            raise CLIError(
                f"--metrics-port {args.metrics_port}: cannot listen on {args.metrics_host}: "
                f"{exc.strerror or exc}"
            ) from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGTERM, stop.set)
    try:
        async with running_service(settings, metrics=metrics) as service:
            indexer = service.indexer
            banner = (
                f"archivist worker {indexer.owner}: indexing {settings.workers} document(s) "
                f"at once; files in {indexer.files.url}"
            )
            if args.log_format == "json":
                logging.getLogger("archivist.worker").info(banner)
            else:
                print(banner, flush=True)
            await stop.wait()
    finally:
        if stop_metrics is not None:
            await asyncio.to_thread(stop_metrics)
    return 0
