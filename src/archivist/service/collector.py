"""Short garbage-collector pauses: what the service imported is moved out of the collector's
reach.

A full collection walks every tracked object while it holds the GIL, and nearly all of a
running service's objects are code: the functions, dicts and pydantic fields of every module
it imported, so each full pass stops every request in flight for as long as walking all of
them takes. Imported code is never garbage, so once the
service has started, and again after each later wave of imports (a first PDF, a first
search), one full collection clears what is garbage and `gc.freeze()` moves the survivors to
the permanent generation, which later collections skip.
"""

from __future__ import annotations

import asyncio
import gc
import sys

CHECK_SECONDS = 2.0
"""How often the service looks for newly imported modules."""


def freeze_after_imports(modules_seen: int) -> int:
    """Collect, then freeze every tracked object, if modules were imported since the count
    was `modules_seen`; the count of imported modules now."""
    modules = len(sys.modules)
    if modules != modules_seen:
        gc.collect()
        gc.freeze()
    return modules


async def keep_imports_frozen(check_seconds: float = CHECK_SECONDS) -> None:
    """Freeze now, then after every wave of imports, until cancelled."""
    modules_seen = -1
    while True:
        modules_seen = freeze_after_imports(modules_seen)
        await asyncio.sleep(check_seconds)
