import sys
from pathlib import Path

import pytest

pytest.register_assert_rewrite("archivist.testing", "qdrant_cases")

# The shared store fixture and hash embedding model every directory uses (also offered to
# third-party store authors).
pytest_plugins = ["archivist.testing.fixtures"]

sys.path.insert(0, str(Path(__file__).parent))
