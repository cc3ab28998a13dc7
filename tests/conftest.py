import sys
from pathlib import Path

import pytest

pytest.register_assert_rewrite("archivist.testing", "qdrant_cases")

sys.path.insert(0, str(Path(__file__).parent))
