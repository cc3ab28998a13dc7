"""The command line's shared options and argparse value checks, and `CLIError`, the one-line
usage error every command reports."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archivist.errors import InvalidArgumentError
from archivist.options import CHUNK_SIZE, OVERLAP, SERVICE_CHUNK_SIZE, SERVICE_OVERLAP, Option

if TYPE_CHECKING:
    from archivist.rag.chunker import ChunkSettings

DEFAULT_WAIT_SECONDS = 60.0


class CLIError(InvalidArgumentError):
    """A bad command line (an option's value, a name, a path): reported in one line, with
    exit code 2."""


def add_option(
    cmd: argparse._ActionsContainer,
    option: Option,
    *,
    short: str | None = None,
    help: str | None = None,  # add_argument's name
    default_text: str | None = None,
    **overrides: Any,
) -> argparse.Action:
    """`option`'s flag (and `short`) on `cmd`: its default (from its environment variable
    when set), its bounds checked as the value is read, and its help (`help` in place of the
    option's) followed by the variable, the range and the default it shows (`default_text`
    in place of the option's). `overrides` go to `add_argument` as they are."""
    default = option.default
    text = help or option.help
    if option.env is not None:
        default = os.environ.get(option.env) or default
        text += f" (or {option.env})"
    if option.le is not None:
        text += f" ({option.range_text()})"
    shown = default_text or option.shown_default()
    if shown is not None:
        text += f" (default: {shown})"
    arguments: dict[str, Any] = {"default": default, "help": text}
    if option.kind in (int, float):
        arguments["type"] = option_type(option)
    if option.choices is not None:
        arguments["choices"] = option.choices
    if option.metavar is not None:
        arguments["metavar"] = option.metavar
    flags = (short, option.flag) if short is not None else (option.flag,)
    return cmd.add_argument(*flags, **{**arguments, **overrides})


def option_type(option: Option) -> Callable[[str], Any]:
    """argparse type: a finite number of `option.kind` within its bounds; a refusal says
    what is allowed (argparse names the flag)."""
    kind = option.kind
    what = "a whole number" if kind is int else "a number"
    bounds = option.range_text()
    wanted = f"{what} {bounds}" if bounds else what

    def check(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or not option.allows(value):
            raise argparse.ArgumentTypeError(f"must be {wanted}, got {text!r}")
        return value

    check.__name__ = kind.__name__
    return check


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


def add_chunking_arguments(
    cmd: argparse.ArgumentParser, *, from_kb: bool, service: bool = False
) -> None:
    """`--chunk-size` and `--overlap`, defaulting to `ChunkSettings`'; with `from_kb`, unset
    means the knowledge base's own settings; with `service`, within a service's bounds."""
    chunking = (SERVICE_CHUNK_SIZE, SERVICE_OVERLAP) if service else (CHUNK_SIZE, OVERLAP)
    for option in chunking:
        if from_kb:
            kb = f"the KB's; for a new KB {option.shown_default()}"
            add_option(cmd, option, default=None, default_text=kb)
        else:
            add_option(cmd, option)


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
