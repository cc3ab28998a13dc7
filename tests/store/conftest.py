import pytest

pytest.register_assert_rewrite("qdrant_cases")
