"""A batch's Python work off the event loop: in a worker thread for a batch, inline for a few
items, where the hop to a thread costs more than the work."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

INLINE_ITEMS = 16
"""Work on fewer items than this runs inline on the loop; on this many or more, in a thread."""


async def off_loop(work: Callable[[], T], items: int) -> T:
    """`work()`, which handles `items` items: in a worker thread (the loop keeps answering while
    it runs, the work taking the GIL in short turns), or inline below INLINE_ITEMS."""
    if items < INLINE_ITEMS:
        return work()
    return await asyncio.to_thread(work)
