"""`--ocr` and `--ocr-languages`: whether and how scanned pages and images are read."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from archivist.cli.arguments import CLIError
from archivist.cli.home import archivist_home

if TYPE_CHECKING:
    from archivist.rag.parser.ocr import Ocr

# The library's names, kept here so that registering the options imports no parser.
OCR_CHOICES = ("auto", "off", "tesseract", "rapidocr")
DEFAULT_LANGUAGES = ("eng", "chi_sim")
_LANGUAGES = re.compile(r"[A-Za-z_]{2,32}(\+[A-Za-z_]{2,32}){0,15}")


def add_ocr_arguments(cmd: argparse.ArgumentParser) -> None:
    """`--ocr ENGINE` and `--ocr-languages LANGS`."""
    cmd.add_argument(
        "--ocr",
        choices=OCR_CHOICES,
        default="auto",
        help="read scanned PDF pages and images with OCR: auto (Tesseract if installed with "
        "the languages, else RapidOCR if installed, else none), off, or an engine "
        "(default: auto)",
    )
    cmd.add_argument(
        "--ocr-languages",
        type=ocr_languages,
        default=DEFAULT_LANGUAGES,
        metavar="LANGS",
        help="languages OCR reads, by Tesseract's names joined with + "
        f"(default: {'+'.join(DEFAULT_LANGUAGES)})",
    )


def ocr_languages(value: str) -> tuple[str, ...]:
    """`eng+chi_sim` as ("eng", "chi_sim"); anything else is a usage error."""
    if not _LANGUAGES.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"expected language names joined with + (e.g. eng+chi_sim), got {value!r}"
        )
    return tuple(value.split("+"))


def ocr_from_args(
    args: argparse.Namespace, on_page: Callable[[str, int | None, int | None], None] | None = None
) -> Ocr | None:
    """The `Ocr` the options ask for (None: off), its results cached in the Archivist home;
    an engine named but not usable is a CLIError saying what to install."""
    if args.ocr == "off":
        return None
    from archivist.rag.parser.ocr import Ocr

    try:
        ocr = Ocr(
            args.ocr,
            languages=args.ocr_languages,
            cache_dir=archivist_home() / "ocr-cache",
            on_page=on_page,
        )
        ocr.engine  # noqa: B018  # resolves now: a missing engine is a usage error, not N failures
    except ValueError as exc:
        raise CLIError(f"--ocr {args.ocr}: {exc}") from None
    return ocr
