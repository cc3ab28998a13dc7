"""Writes docs/reference/cli.md, the command-line reference, from the CLI's own argparse parser.

Run it after changing a command or an option: `.venv/bin/python scripts/gen_cli_reference.py`
(in a fresh interpreter: models registered in a process, and ARCHIVIST_* variables, show in
the options' help).
tests/readme/test_cli_reference.py fails while the committed page differs from what it writes.
Rendering argparse as Markdown is a few lines; the one plugin made for it is a 0.0.1 release.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from archivist.cli.main import build_parser

WIDTH = "88"
PAGE = Path(__file__).resolve().parent.parent / "docs" / "reference" / "cli.md"


def _commands(
    parser: argparse.ArgumentParser, prefix: str
) -> Iterator[tuple[str, str | None, argparse.ArgumentParser]]:
    """Every command under `parser`, depth first, with its one-line help."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                full = f"{prefix} {name}"
                yield full, helps.get(name), sub
                yield from _commands(sub, full)


def render() -> str:
    """The whole page: the top-level help, then one section per command."""
    os.environ["COLUMNS"] = WIDTH  # argparse wraps to the terminal; the page has a fixed width
    os.environ["NO_COLOR"] = "1"  # argparse colours help on a terminal; the page is plain text
    parser = build_parser()
    lines = [
        "# Command-line reference",
        "",
        "<!-- Written by scripts/gen_cli_reference.py from the CLI's parser: change the CLI,",
        "then run the script. -->",
        "",
        "Generated from the parser of `archivist` itself: each section is what",
        "`archivist COMMAND --help` prints.",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
        "",
    ]
    for name, summary, sub in _commands(parser, parser.prog):
        level = "#" * (name.count(" ") + 1)  # `archivist keys create` nests under `keys`
        lines += [f"{level} `{name}`", ""]
        if summary:
            lines += [summary[0].upper() + summary[1:] + ".", ""]
        lines += ["```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    # `--print`: the page on stdout instead (the test compares it with the committed one).
    if "--print" in sys.argv[1:]:
        sys.stdout.write(render())
    else:
        PAGE.write_text(render(), encoding="utf-8")
