"""Background threads at a lower CPU priority, so that on a busy machine the threads that
answer requests get the cores first and background work takes what is left."""

from __future__ import annotations

import logging
import os
import sys
import threading

from archivist.validation import check_non_negative_int

logger = logging.getLogger(__name__)

MAX_NICENESS = 19


def lower_this_thread(niceness: int) -> None:
    """Make the calling thread `niceness` steps nicer (threads it starts inherit it).

    Only Linux sets a nice value per thread; elsewhere this does nothing, since the same call
    would slow the whole process. A thread cannot undo it without privileges, so call it only
    in a thread that does background work alone. A system that refuses the change (a
    sandbox's syscall filter) leaves the priority as it was: the work still runs, only
    without the lower priority.
    """
    check_non_negative_int(niceness, "niceness")
    if niceness == 0 or not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(current + niceness, MAX_NICENESS))
    except OSError as error:
        logger.warning("could not lower the priority of thread %d: %s", thread, error)


SWITCH_INTERVAL = 0.001
"""How soon a running thread hands the GIL to another (CPython's default is 5 ms), in the
processes that answer requests while other threads work: the service and its store
process. A request waits less behind Python work on other threads."""


def answer_sooner() -> None:
    """Set this process's GIL switch interval to SWITCH_INTERVAL."""
    sys.setswitchinterval(SWITCH_INTERVAL)
