"""Writes the docs site's command-line reference from the CLI's own argparse parser.

Run by mkdocs-gen-files at build time, so the page always matches `archivist --help`.
Rendering argparse as Markdown is a few lines; the one plugin made for it is a 0.0.1 release.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator

import mkdocs_gen_files

from archivist.cli.main import build_parser

WIDTH = "88"
PAGE = "reference/cli.md"


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
    parser = build_parser()
    lines = [
        "# Command-line reference",
        "",
        "Generated from the parser of `archivist` itself: each section is what "
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


with mkdocs_gen_files.open(PAGE, "w") as page:
    page.write(render())
