"""Confirmation of an operation that removes what cannot be indexed back without the files."""

from __future__ import annotations

import sys

from archivist.cli.arguments import CLIError


def confirm(what: str, yes: bool) -> None:
    """Go on if `yes` (`--yes` was given) or the user says so on a terminal; otherwise a
    CLIError saying what was not done. Without a terminal to ask on, `--yes` is required."""
    if yes:
        return
    if not can_ask():
        raise CLIError(f"{what}; pass --yes to confirm", argument="--yes")
    print(f"{what}. Continue? [y/N] ", end="", file=sys.stderr, flush=True)
    try:
        answer = input()
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        raise CLIError("not confirmed; nothing was changed")


def can_ask() -> bool:
    """Whether a person is there to answer: standard input and error are a terminal."""
    return sys.stdin.isatty() and sys.stderr.isatty()
