"""The service moves what it imported out of the garbage collector's full passes."""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Iterator

import pytest

from archivist.service.collector import freeze_after_imports


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_a_wave_of_imports_is_frozen_and_nothing_else(unfrozen: None) -> None:
    seen = freeze_after_imports(-1)
    assert seen == len(sys.modules) and gc.get_freeze_count() > 0
    gc.unfreeze()
    assert freeze_after_imports(seen) == seen
    assert gc.get_freeze_count() == 0  # no new module: no freeze
    sys.modules["archivist_test_new_module"] = types.ModuleType("archivist_test_new_module")
    try:
        assert freeze_after_imports(seen) == seen + 1
        assert gc.get_freeze_count() > 0
    finally:
        del sys.modules["archivist_test_new_module"]
