"""The command line's shared options and argparse value checks, and `CLIError`, the one-line
usage error every command reports."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from archivist.chunk_defaults import DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP
from archivist.errors import InvalidArgumentError

if TYPE_CHECKING:
    from archivist.rag.chunker import ChunkSettings

DEFAULT_WAIT_SECONDS = 60.0


class CLIError(InvalidArgumentError):
    """A bad command line (an option's value, a name, a path): reported in one line, with
    exit code 2."""


def positive_int(text: str) -> int:
    """argparse type: an int of 1 or more."""
    if not text.strip().lstrip("-").isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of 1 or more, got {text!r}")
    return int(text)


def non_negative_int(text: str) -> int:
    """argparse type: an int of 0 or more."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"must be a whole number of 0 or more, got {text!r}")
    return int(text)


def positive_seconds(text: str) -> float:
    """argparse type: a number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {text!r}")
    return value


def non_empty(text: str) -> str:
    """argparse type: text with something besides whitespace."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def add_common_arguments(cmd: argparse.ArgumentParser) -> None:
    """`--kb`, `--store`, `--tenant` and `--wait`, shared by every command that opens a store."""
    cmd.add_argument("--kb", default="default", help="knowledge base name")
    add_store_arguments(cmd)


def add_store_arguments(cmd: argparse.ArgumentParser, *, searches_only: bool = False) -> None:
    """`--store`, `--tenant` and `--wait`; `searches_only` words their help for a command
    that only searches."""
    cmd.add_argument(
        "--store", type=Path, default=None, help="store directory (default: $ARCHIVIST_HOME/store)"
    )
    confines = (
        "searches only that tenant's records"
        if searches_only
        else ("confines every read and write to that tenant")
    )
    cmd.add_argument(
        "--tenant",
        default=None,
        help=f"tenant id: {confines} (default: the records that belong to no tenant)",
    )
    waits = "how long a search waits" if searches_only else "how long to wait"
    cmd.add_argument(
        "--wait",
        type=float,
        default=DEFAULT_WAIT_SECONDS,
        metavar="SECONDS",
        help=f"{waits} while another archivist process has the knowledge base open",
    )


CHUNKING_OPTIONS = {"chunk_size": "--chunk-size", "overlap": "--overlap"}
"""The command-line option of each `ChunkSettings` field."""


def add_chunking_arguments(cmd: argparse.ArgumentParser, *, from_kb: bool) -> None:
    """`--chunk-size` and `--overlap`, defaulting to `ChunkSettings`'; with `from_kb`, unset
    means the knowledge base's own settings."""
    kb = "the KB's; for a new KB " if from_kb else ""
    size = (
        "the model's input length, so no chunk is truncated"
        if DEFAULT_CHUNK_SIZE is None
        else DEFAULT_CHUNK_SIZE
    )
    cmd.add_argument(
        "--chunk-size",
        type=positive_int,
        default=None if from_kb else DEFAULT_CHUNK_SIZE,
        help="tokens per chunk, measured with the embedding model's own tokenizer "
        f"(default: {kb}{size})",
    )
    cmd.add_argument(
        "--overlap",
        type=non_negative_int,
        default=None if from_kb else DEFAULT_OVERLAP,
        help=f"tokens shared by neighbouring chunks (default: {kb}{DEFAULT_OVERLAP})",
    )


def chunking_error(exc: ValueError) -> CLIError:
    """A chunker's or `ChunkSettings`' refusal as a one-line CLIError naming the option."""
    argument = exc.argument if isinstance(exc, InvalidArgumentError) else None
    return CLIError(f"{CHUNKING_OPTIONS.get(argument or '', '--chunk-size')}: {exc}")


def chunk_settings(chunk_size: int | None, overlap: int | None) -> ChunkSettings:
    """`--chunk-size` and `--overlap` as `ChunkSettings` (None: its default), or a one-line
    CLIError naming the option."""
    from archivist.rag.chunker import ChunkSettings

    try:
        return ChunkSettings.of(chunk_size=chunk_size, overlap=overlap)
    except ValueError as exc:
        raise chunking_error(exc) from None


def add_json_argument(cmd: argparse.ArgumentParser) -> None:
    """`--json`: machine-readable output on stdout."""
    cmd.add_argument("--json", action="store_true", help="print JSON for scripts")


def non_negative_seconds(text: str) -> float:
    """argparse type: a number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds, 0 or more, got {text!r}")
    return value


def add_timeout_argument(cmd: argparse.ArgumentParser, default: float, what: str) -> None:
    """`--timeout`: seconds one request to a remote model may take before it is retried."""
    cmd.add_argument(
        "--timeout",
        type=positive_seconds,
        default=default,
        metavar="SECONDS",
        help=f"seconds one request to the {what} may take (each retry gets as long)",
    )
