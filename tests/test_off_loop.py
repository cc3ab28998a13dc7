"""`off_loop` runs work on a few items inline and work on a batch in a worker thread."""

import threading

import pytest

from archivist._util.off_loop import INLINE_ITEMS, off_loop


def _on_loop() -> bool:
    return threading.current_thread() is threading.main_thread()


async def test_a_few_items_run_inline() -> None:
    assert await off_loop(_on_loop, INLINE_ITEMS - 1) is True


async def test_a_batch_runs_in_a_worker_thread() -> None:
    assert await off_loop(_on_loop, INLINE_ITEMS) is False


async def test_an_error_reaches_the_caller_either_way() -> None:
    def fail() -> None:
        raise ValueError("bad record 3")

    for items in (1, INLINE_ITEMS):
        with pytest.raises(ValueError, match="bad record 3"):
            await off_loop(fail, items)
