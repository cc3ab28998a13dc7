"""The `archivist` command line.

Exit codes follow the class of the error (`archivist.errors`), never its message: 0 ok,
1 some files failed, 2 usage or configuration error, 3 a model (embedding or chat, remote or
local) failed, 4 the store is unavailable (e.g. in use), 5 a file, folder or document cannot
be used, 130 interrupted, 70 internal error (a bug: rerun with `--debug` for the traceback).
"""

from __future__ import annotations

import argparse
import difflib
import gc
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from archivist import __version__
from archivist._util.text import one_line
from archivist.cli.ask_command import add_ask_command
from archivist.cli.chat_server_command import add_chat_server_command
from archivist.cli.chunk_command import add_chunk_command
from archivist.cli.docs_command import add_docs_commands
from archivist.cli.doctor_command import add_doctor_command
from archivist.cli.eval_command import add_eval_command
from archivist.cli.index_command import add_index_command
from archivist.cli.kb_commands import add_kb_commands
from archivist.cli.keys_command import add_keys_command
from archivist.cli.mcp_command import add_mcp_command
from archivist.cli.search_command import add_search_command, attach_query_values
from archivist.cli.serve_command import add_serve_command
from archivist.cli.worker_command import add_worker_command
from archivist.errors import (
    ChatModelError,
    ConfigurationError,
    DocumentNotFoundError,
    EmbeddingError,
    FileError,
    InvalidArgumentError,
    StoreError,
)

if TYPE_CHECKING:
    import httpx

EXIT_OK, EXIT_FILES_FAILED, EXIT_USAGE, EXIT_REMOTE = 0, 1, 2, 3
EXIT_STORE, EXIT_DATA = 4, 5
EXIT_INTERRUPTED, EXIT_INTERNAL, EXIT_PIPE_CLOSED = 130, 70, 141
EXIT_CODES = f"""exit codes:
  {EXIT_OK}    ok
  {EXIT_FILES_FAILED}    some files failed (index); a default cannot work here (doctor)
  {EXIT_USAGE}    usage or configuration error
  {EXIT_REMOTE}    a model failed (embedding or chat; a provider or the local model)
  {EXIT_STORE}    the store is unavailable (e.g. in use by another process)
  {EXIT_DATA}    a file, folder or document cannot be used
  {EXIT_INTERRUPTED}  interrupted
  {EXIT_PIPE_CLOSED}  the reader of the output went away (e.g. `| head`)
  {EXIT_INTERNAL}   internal error (rerun with --debug and report it)
"""


class _DefaultsFormatter(argparse.RawDescriptionHelpFormatter):
    """Help that shows an option's default unless its text names it already (or it has none);
    a command's description keeps its lines (examples stay whole)."""

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


class _Parser(argparse.ArgumentParser):
    """The CLI's parser, for every command: an option must be spelled whole (`--reb` is not
    `--rebuild`), a misspelt command or option gets "did you mean", and an argument a
    command does not take is reported with that command's usage and with its hints (set as
    defaults) when it has them: `dash_hint` for an unknown '-' word (how to search for text
    that starts with '-'), `words_hint` for a word too many (quote a query of words)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse `args`; an argument this parser does not take is a usage error here, so the
        message comes with the usage of the command it was given to (what follows a
        command's name is that command's alone), never left for the top-level parser."""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(self._unrecognized(extras))
        return parsed, extras

    def _unrecognized(self, extras: list[str]) -> str:
        """`unrecognized arguments: ...`, with the closest option to each misspelt one
        (`did you mean -k/--top-k?`), else the command's hints."""
        hint = self.get_default("dash_hint")
        words = self.get_default("words_hint")
        notes: list[str] = []
        unknown = dict.fromkeys(extra.split("=", 1)[0] for extra in extras if extra[:1] == "-")
        guessed = 0
        for option in unknown:
            meant = self._closest_option(option) if option.startswith("--") else None
            if meant is not None:
                notes.append(f"did you mean {meant}?")
                guessed += 1
        if hint and guessed < len(unknown):  # a misspelt option needs no dash hint
            notes.append(hint)
        if words and not unknown:  # words alone: a query typed without quotes
            notes.append(words)
        detail = f" ({'; '.join(notes)})" if notes else ""
        return f"unrecognized arguments: {' '.join(extras)}{detail}"

    def _closest_option(self, option: str) -> str | None:
        """The option closest to `option` in all its spellings (`-k/--top-k`), or None."""
        close = difflib.get_close_matches(option, list(self._option_string_actions), 1, 0.6)
        if not close:
            return None
        return "/".join(self._option_string_actions[close[0]].option_strings)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """A value outside an option's or a command's choices names the closest one."""
        choices = action.choices
        if choices is not None and isinstance(value, str) and value not in choices:
            close = difflib.get_close_matches(value, [str(c) for c in choices], n=1)
            if close:
                listed = ", ".join(map(str, choices))
                raise argparse.ArgumentError(
                    action,
                    f"invalid choice: {value!r}; did you mean {close[0]!r}? (choose from {listed})",
                )
        super()._check_value(action, value)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = _Parser(
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
    add_chat_server_command(commands)
    add_eval_command(commands)
    add_chunk_command(commands)
    add_serve_command(commands)
    add_keys_command(commands)
    add_mcp_command(commands)
    add_worker_command(commands)
    add_doctor_command(commands)
    for command in _commands(parser):
        command.formatter_class = _DefaultsFormatter
        command.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help="show tracebacks of errors",
        )
    return parser


def _commands(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """The parsers of every command under `parser`, nested ones (`kbs rm`) included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                yield command
                yield from _commands(command)


def _log_to_stderr(debug: bool) -> None:
    """Warnings of the library (e.g. "retrying in N s") as one line each on stderr."""
    import logging

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


def run() -> NoReturn:
    """Entry point of the console script and `python -m archivist`: `main`, then exit.

    What the command left alive is frozen out of the garbage collector first, so the
    interpreter's shutdown does not collect and destruct it (the model session among it)
    just before the OS frees it all anyway; everything that must be written was flushed and
    closed inside `main`."""
    code = main()
    gc.freeze()
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command `argv` (default: the process arguments); returns the exit code."""
    args = build_parser().parse_args(  # --version and --help exit here
        attach_query_values(list(sys.argv[1:] if argv is None else argv))
    )
    import asyncio
    import logging

    debug = bool(getattr(args, "debug", False))
    _log_to_stderr(debug)
    choose_loop = getattr(args, "event_loop", None)  # a command may run on another loop
    try:
        with asyncio.Runner(loop_factory=choose_loop() if choose_loop else None) as runner:
            code: int = runner.run(args.handler(args))
    except KeyboardInterrupt:  # through the logger: a JSON line under `--log-format json`
        logging.getLogger("archivist").warning("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`archivist ls | head`): stop quietly, as shell tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE_CLOSED
    except Exception as exc:
        return _fail(exit_code_for(exc), _message_for(exc), debug)
    return code


_EXIT_BY_CLASS: tuple[tuple[type[BaseException], int], ...] = (
    (InvalidArgumentError, EXIT_USAGE),  # CLIError among them: the command line's own checks
    (ConfigurationError, EXIT_USAGE),
    (ImportError, EXIT_USAGE),  # an optional package (an extra) is not installed
    (EmbeddingError, EXIT_REMOTE),
    (ChatModelError, EXIT_REMOTE),
    (StoreError, EXIT_STORE),
    (DocumentNotFoundError, EXIT_DATA),
    (FileError, EXIT_DATA),
    (OSError, EXIT_DATA),
    (ValueError, EXIT_DATA),  # a library's refusal of a value read from a file
)
"""The exit code of an error by its class, first match wins (see EXIT_CODES)."""


def exit_code_for(exc: BaseException) -> int:
    """The exit code of an error that ended a command, chosen by its class."""
    http = sys.modules.get("httpx")  # loaded only by commands that talk to a provider
    if http is not None and isinstance(exc, http.HTTPError):
        return EXIT_REMOTE
    for kind, code in _EXIT_BY_CLASS:
        if isinstance(exc, kind):
            return code
    return EXIT_INTERNAL


def _message_for(exc: BaseException) -> str:
    """The one line printed for an error that ended a command."""
    code = exit_code_for(exc)
    if code == EXIT_REMOTE:
        return _remote_message(exc)
    if code == EXIT_INTERNAL:
        return f"internal error {type(exc).__name__}: {exc} (rerun with --debug for the traceback)"
    return str(exc)


def _remote_message(exc: BaseException) -> str:
    """What failed in a model or its provider, naming the host when httpx knows it."""
    http = sys.modules.get("httpx")
    if http is not None and isinstance(exc, http.TimeoutException):
        return f"the remote service did not answer in time ({_where(exc)}); raise --timeout?"
    if http is not None and isinstance(exc, http.HTTPError):
        return f"remote service failed ({_where(exc)}): {type(exc).__name__}: {exc}"
    if isinstance(exc, EmbeddingError):
        return f"the embedding model failed: {exc}"
    return f"the chat model failed: {exc}"


def _where(exc: httpx.HTTPError) -> str:
    try:
        return str(exc.request.url)
    except RuntimeError:
        return "unknown request"


if __name__ == "__main__":
    sys.exit(main())
