"""`archivist doctor`: what this machine can do, and the one command that adds each missing
piece."""

from __future__ import annotations

import argparse
import dataclasses
import shutil
from typing import TYPE_CHECKING, Any

from archivist.cli.arguments import add_json_argument, add_option
from archivist.cli.ocr_options import ocr_languages
from archivist.cli.output import print_json, wrap
from archivist.options import OCR_LANGUAGES

if TYPE_CHECKING:
    from archivist.cli.doctor import Piece, Report

EXIT_DEFAULTS_BROKEN = 1


def add_doctor_command(commands: Any) -> None:
    """Register the `doctor` sub-command."""
    cmd = commands.add_parser(
        "doctor",
        help="say what this machine can do: extras, system programs, OCR, models, home",
        description="List the extras installed, the system programs found, which OCR engine "
        "--ocr auto uses, the embedding models available offline and the knowledge bases in "
        "the home folder; for each missing piece, the one command that adds it. Exits 0 "
        f"when the defaults work here, {EXIT_DEFAULTS_BROKEN} when one cannot.",
    )
    add_option(cmd, OCR_LANGUAGES, type=ocr_languages)
    add_json_argument(cmd)
    cmd.set_defaults(handler=run_doctor)


async def run_doctor(args: argparse.Namespace) -> int:
    """Print the report; exit 0 when the defaults work."""
    from archivist.cli.doctor import gather

    report = gather(tuple(args.ocr_languages))
    if args.json:
        payload = dataclasses.asdict(report)
        payload["defaults_work"] = report.defaults_work
        print_json(payload)
    else:
        for line in render(report, shutil.get_terminal_size().columns):
            print(line)
    return 0 if report.defaults_work else EXIT_DEFAULTS_BROKEN


def render(report: Report, columns: int) -> list[str]:
    """The report as lines of at most `columns` terminal columns (80 at least assumed for
    the names; longer texts wrap)."""
    width = max(40, columns)
    lines = [
        f"archivist {report.version}, Python {report.python}, {report.platform}",
        "",
    ]
    if report.defaults_work:
        lines.append("The defaults work here.")
    else:
        lines.append("The defaults cannot work here:")
        for problem in report.problems:
            lines += wrap(problem, width, "  - ", "    ")
    lines += ["", "OCR (--ocr auto)"]
    lines += wrap(report.ocr.summary, width, "  ", "  ")
    sections = (
        ("Extras", report.extras),
        ("System programs", report.programs),
        ("Embedding models available offline", report.embedding_models),
        ("Answers (ask, the service's chat)", report.answers),
    )
    for title, pieces in sections:
        lines += ["", title]
        name_width = max(len(piece.name) for piece in pieces)
        for piece in pieces:
            lines += _piece_lines(piece, name_width, width)
    lines += ["", "Home (ARCHIVIST_HOME moves it)", f"  {report.home}"]  # whole, to copy
    if report.knowledge_bases:
        listed = ", ".join(f"{kb.name} ({kb.embedding_model})" for kb in report.knowledge_bases)
        lines += wrap(f"knowledge bases: {listed}", width, "  ", "    ")
    else:
        lines.append("  no knowledge bases yet: archivist index PATH --kb NAME")
    lines.append(
        "  the service's data: yes"
        if report.service_set_up
        else "  the service's data: none yet (start with: archivist keys create --tenant NAME)"
    )
    return lines


def _piece_lines(piece: Piece, name_width: int, width: int) -> list[str]:
    mark = "yes" if piece.present else "no "
    head = f"  {mark} {piece.name.ljust(name_width)}  "
    indent = " " * len(head)
    text = piece.gives + (f"; {piece.detail}" if piece.detail else "")
    room = max(20, width - len(head))
    lines = [
        (head if number == 0 else indent) + line for number, line in enumerate(wrap(text, room))
    ]
    if piece.add:  # whole, to copy at any width
        lines.append(f"{indent}add: {piece.add}")
    return lines
