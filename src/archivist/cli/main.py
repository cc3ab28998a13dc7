"""The `archivist` command line.

Exit codes: 0 ok, 1 some files failed, 2 usage or configuration error, 3 a remote service
(chat or embedding provider) failed, 130 interrupted, 70 internal error (a bug: rerun with
`--debug` for the traceback).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import traceback
from collections.abc import Sequence

import httpx

from archivist import __version__
from archivist._text import one_line
from archivist.cli.ask_command import add_ask_command
from archivist.cli.chunk_command import add_chunk_command
from archivist.cli.docs_command import add_docs_commands
from archivist.cli.eval_command import add_eval_command
from archivist.cli.index_command import add_index_command
from archivist.cli.kb_commands import add_kb_commands
from archivist.cli.keys_command import add_keys_command
from archivist.cli.search_command import add_search_command
from archivist.cli.serve_command import add_serve_command
from archivist.cli.session import CLIError
from archivist.cli.worker_command import add_worker_command
from archivist.embedding.errors import EmbeddingError
from archivist.model.errors import ChatModelError

EXIT_OK, EXIT_FILES_FAILED, EXIT_USAGE, EXIT_REMOTE = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_INTERNAL, EXIT_PIPE_CLOSED = 130, 70, 141
EXIT_CODES = f"""exit codes:
  {EXIT_OK}    ok
  {EXIT_FILES_FAILED}    some files failed (index)
  {EXIT_USAGE}    usage or configuration error
  {EXIT_REMOTE}    a remote service (chat or embedding provider) failed
  {EXIT_INTERRUPTED}  interrupted
  {EXIT_PIPE_CLOSED}  the reader of the output went away (e.g. `| head`)
  {EXIT_INTERNAL}   internal error (rerun with --debug and report it)
"""


class _DefaultsFormatter(argparse.HelpFormatter):
    """Help that shows an option's default unless its text names it already (or it has none)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default in (None, False, argparse.SUPPRESS)
            or not action.option_strings
        ):
            return text
        return f"{text} (default: {default})"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="archivist",
        description="Index files and search them for AI agents.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"archivist {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    commands = parser.add_subparsers(dest="command", required=True)
    add_index_command(commands)
    add_search_command(commands)
    add_docs_commands(commands)
    add_kb_commands(commands)
    add_ask_command(commands)
    add_eval_command(commands)
    add_chunk_command(commands)
    add_serve_command(commands)
    add_keys_command(commands)
    add_worker_command(commands)
    for command in commands.choices.values():
        command.formatter_class = _DefaultsFormatter
        command.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help="show tracebacks of errors",
        )
    return parser


def _log_to_stderr(debug: bool) -> None:
    """Warnings of the library (e.g. "retrying in N s") as one line each on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("archivist: %(message)s"))
    root = logging.getLogger("archivist")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if debug else logging.WARNING)
    root.propagate = False


def _fail(code: int, message: str, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    print(f"archivist: error: {one_line(message, 400)}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    _log_to_stderr(debug)
    try:
        code: int = asyncio.run(args.handler(args))
    except KeyboardInterrupt:
        print("archivist: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`archivist ls | head`): stop quietly, as shell tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE_CLOSED
    except (ChatModelError, EmbeddingError, httpx.HTTPError) as exc:
        return _fail(EXIT_REMOTE, _remote_message(exc), debug)
    except ImportError as exc:
        return _fail(EXIT_USAGE, str(exc), debug)
    except (CLIError, ValueError, OSError) as exc:
        return _fail(EXIT_USAGE, str(exc), debug)
    except Exception as exc:
        return _fail(
            EXIT_INTERNAL,
            f"internal error {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
            debug,
        )
    return code


def _remote_message(exc: BaseException) -> str:
    """What failed remotely, naming the host when httpx knows it."""
    if isinstance(exc, httpx.TimeoutException):
        return f"the remote service did not answer in time ({_where(exc)}); raise --timeout?"
    if isinstance(exc, httpx.HTTPError):
        return f"remote service failed ({_where(exc)}): {type(exc).__name__}: {exc}"
    return f"remote service failed: {exc}"


def _where(exc: httpx.HTTPError) -> str:
    try:
        return str(exc.request.url)
    except RuntimeError:
        return "unknown request"


if __name__ == "__main__":
    sys.exit(main())
