import os
import sys
from pathlib import Path

import pytest

pytest.register_assert_rewrite("archivist.testing", "qdrant_cases")

# The shared store fixture and hash embedding model every directory uses (also offered to
# third-party store authors); the skip-or-fail rule of tests that need a system program
# (tests/system_programs.py); `pytester`, for the tests of that rule.
pytest_plugins = ["archivist.testing.fixtures", "system_programs", "pytester"]

sys.path.insert(0, str(Path(__file__).parent))

# Haystack reports usage to its vendor unless told not to when it is imported: the tests (and
# the docs' examples they run in child processes) send nothing off this machine.
os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"
