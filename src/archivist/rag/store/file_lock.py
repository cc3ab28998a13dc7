"""An exclusive, process-wide lock on a store directory (POSIX `flock`), naming its holder."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO

from archivist.errors import StoreLockedError as StoreLockedError

if sys.platform != "win32":
    import fcntl


class StoreLock:
    """Holds `directory/store.lock` with `flock` while acquired; the holder's PID is written in it.

    The kernel drops the lock when the holder dies, so a crashed process never leaves it stuck.
    """

    FILE_NAME = "store.lock"

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock or raise StoreLockedError naming the PID that holds it."""
        if sys.platform == "win32":
            raise RuntimeError("a store at a path needs POSIX file locking; not on Windows yet")
        path = self._directory / self.FILE_NAME
        handle = path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise StoreLockedError(self._directory, f"PID {holder}") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._file = handle

    def release(self) -> None:
        """Let go of the lock; a no-op when not held."""
        if self._file is None or sys.platform == "win32":
            return
        self._file.truncate(0)
        fcntl.flock(self._file, fcntl.LOCK_UN)
        self._file.close()
        self._file = None
