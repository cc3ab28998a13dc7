"""`--ocr` and `--ocr-languages`: whether and how scanned pages and images are read."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from archivist.cli.arguments import add_option
from archivist.cli.home import archivist_home
from archivist.options import OCR, OCR_LANGUAGES
from archivist.rag.parser.ocr.choices import LANGUAGES_PATTERN

if TYPE_CHECKING:
    from archivist.rag.parser.ocr import Ocr


def add_ocr_arguments(cmd: argparse.ArgumentParser) -> None:
    """`--ocr ENGINE` and `--ocr-languages LANGS`."""
    add_option(cmd, OCR)
    add_option(cmd, OCR_LANGUAGES, type=ocr_languages)


def ocr_languages(value: str) -> tuple[str, ...]:
    """`eng+chi_sim` as ("eng", "chi_sim"); anything else is a usage error."""
    if not re.fullmatch(LANGUAGES_PATTERN, value):
        raise argparse.ArgumentTypeError(
            f"expected language names joined with + (e.g. eng+chi_sim), got {value!r}"
        )
    return tuple(value.split("+"))


def ocr_from_args(
    args: argparse.Namespace, on_page: Callable[[str, int | None, int | None], None] | None = None
) -> Ocr | None:
    """The `Ocr` the options ask for (None: off), its results cached in the Archivist home;
    an engine named but not usable is a CLIError saying what to install."""
    from archivist.rag.knowledge import factories

    return factories.ocr(
        args.ocr, args.ocr_languages, cache_dir=archivist_home() / "ocr-cache", on_page=on_page
    )
