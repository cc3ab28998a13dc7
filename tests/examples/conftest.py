"""The examples are scripts, not a package: put them, and the store conformance suite, on the
import path of these tests."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
for folder in (ROOT / "examples", ROOT / "tests" / "store"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

pytest.register_assert_rewrite("conformance")
