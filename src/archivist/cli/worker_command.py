"""`archivist worker`: index queued uploads in a process of its own, beside API replicas."""

from __future__ import annotations

import argparse
from typing import Any

from archivist.cli.arguments import CLIError, add_chunking_arguments, add_option
from archivist.cli.serve_command import (
    add_database_argument,
    add_indexing_arguments,
    add_log_format_argument,
    add_shared_store_arguments,
    indexing_settings,
    require_service,
    service_event_loop,
    service_settings,
    shared_store_settings,
    show_startup_choices,
)
from archivist.options import LEASE_SECONDS, POLL_SECONDS, WORKERS


def add_worker_command(commands: Any) -> None:
    """Register the `worker` sub-command."""
    cmd = commands.add_parser(
        "worker",
        help="index queued uploads for `archivist serve` replicas (shared database and stores)",
    )
    add_database_argument(cmd)
    add_shared_store_arguments(cmd)
    add_option(cmd, WORKERS)
    add_indexing_arguments(cmd)
    add_option(cmd, POLL_SECONDS)
    add_option(cmd, LEASE_SECONDS)
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
    cmd.add_argument(
        "--give-up-seconds",
        type=float,
        default=600.0,
        metavar="S",
        help="exit with status 3 once the database has been out of reach this long, so a "
        "supervisor restarts the worker (default 600)",
    )
    cmd.add_argument(
        "--health",
        action="store_true",
        help="check the worker serving --metrics-port here and exit: 0 when it reaches its "
        "database, 1 when it has not for --give-up-seconds or does not answer",
    )
    add_log_format_argument(cmd)
    add_chunking_arguments(cmd, from_kb=False, service=True)
    cmd.set_defaults(handler=run_worker, event_loop=service_event_loop)


WATCH_SECONDS = 5.0
"""How often a worker looks at its own health."""
GAVE_UP = 3
"""The exit status of a worker whose database stayed out of reach."""


def check_health(args: argparse.Namespace) -> int:
    """`archivist worker --health`: 0 if the worker at --metrics-port reaches its database."""
    import time

    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    if args.metrics_port is None:
        raise CLIError("--health reads the worker's metrics: give its --metrics-port")
    url = f"http://{args.metrics_host}:{args.metrics_port}/metrics"
    try:
        text = httpx.get(url, timeout=5).text
    except httpx.HTTPError as exc:
        print(f"unhealthy: no worker answers at {url} ({type(exc).__name__})")
        return 1
    values = {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    errors = values.get("archivist_indexer_consecutive_errors")
    if errors is None:
        print(f"unhealthy: {url} does not report an indexer")
        return 1
    last_ok = values.get("archivist_indexer_last_ok_timestamp_seconds") or 0.0
    if errors > 0 and time.time() - last_ok > args.give_up_seconds:
        print(f"unhealthy: {int(errors)} failed tries in a row, the database out of reach")
        return 1
    print(f"healthy: {int(errors)} failed tries in a row")
    return 0


async def run_worker(args: argparse.Namespace) -> int:
    """Take jobs from the shared queue until SIGTERM or Ctrl-C; held jobs go back to the queue
    when their leases lapse."""
    require_service("worker")
    if args.health:
        return check_health(args)
    from archivist.service.runtime import running_service

    if args.workers < 1:
        raise CLIError(f"--workers {args.workers}: a worker indexes at least 1 document at once")
    if not args.give_up_seconds > 0:
        raise CLIError(f"--give-up-seconds {args.give_up_seconds:g}: give a number above 0")
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
    else:
        show_startup_choices()
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
            watch = min(WATCH_SECONDS, args.give_up_seconds / 2)
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), watch)
                if indexer.health.out_of_reach_for() > args.give_up_seconds:
                    logging.getLogger("archivist.worker").error(
                        "the database has been out of reach for over %g s; exiting so a "
                        "supervisor can restart this worker",
                        args.give_up_seconds,
                    )
                    return GAVE_UP
    finally:
        if stop_metrics is not None:
            await asyncio.to_thread(stop_metrics)
    return 0
