"""`python -m archivist` runs the command line."""

from archivist.cli.main import run

run()
