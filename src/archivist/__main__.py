"""`python -m archivist` runs the command line."""

import sys

from archivist.cli.main import main

sys.exit(main())
