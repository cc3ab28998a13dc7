"""The service's files are readable by its own user only (directories 0700, files 0600)."""

from __future__ import annotations

import os
from pathlib import Path

from archivist.service.settings import ServiceSettings

PRIVATE_UMASK = 0o077


def make_private(settings: ServiceSettings, *extra_dirs: Path) -> None:
    """Create the service's directories 0700 and make everything created from now on
    private (process umask 077): the database, uploads, store and cache files."""
    os.umask(PRIVATE_UMASK)
    for directory in (settings.service_dir, settings.files_dir, *extra_dirs):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        directory.chmod(0o700)  # also a directory an older version created 0755
    database = settings.service_dir / "service.db"
    for path in (database, *(database.with_name(database.name + s) for s in ("-wal", "-shm"))):
        if path.exists():
            path.chmod(0o600)
