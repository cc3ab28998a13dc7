"""`run`: the CLI called in-process, as the CLI tests use it."""

from __future__ import annotations

import pytest

from archivist.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `archivist ARGV`; argparse's own exits (usage errors,
    --help, --version) count as exit codes too."""
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
