"""The sweeper: removes what a process that died left behind, once it is older than the
grace period (`--sweep-grace-seconds`).

- Folders marked pending (an upload never recorded, a deleted document's file whose removal
  was cut short): their files in the file store, then their marks.
- Expired `Idempotency-Key` records.
- Staged copies of S3 files on this machine's disk (an upload or an indexing run cut
  short), except those of documents being indexed now.

Every pass does a bounded amount of work, and is idempotent: several workers sweeping the
same database at once remove the same things once, and a removal cut short is done again by
the next pass. Processes that index sweep everything; API-only replicas sweep only their
own staged copies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, select

from archivist.service.indexing.indexer import log_failure
from archivist.service.storage import upload_records
from archivist.service.storage.catalog import Status
from archivist.service.storage.database import documents, reading
from archivist.service.storage.file_store import FileStore, S3FileStore

logger = logging.getLogger(__name__)

BATCH = 200
"""Most folders, keys or staged uploads one pass removes of each kind."""
LONGEST_PAUSE = 300.0
"""Longest time between passes, whatever the grace period."""


@dataclass
class Swept:
    """What one pass removed."""

    folders: int = 0
    keys: int = 0
    staged: int = 0

    def __bool__(self) -> bool:
        return bool(self.folders or self.keys or self.staged)


class Sweeper:
    """Sweeps every `pause` seconds until cancelled; `shared` also sweeps what the
    database records (pending folders, expired keys), not only this machine's disk."""

    def __init__(self, engine: Engine, files: FileStore, grace: float, shared: bool) -> None:
        self.engine = engine
        self.files = files
        self.grace = grace
        self.shared = shared
        self.pause = min(LONGEST_PAUSE, max(0.5, grace / 4))

    async def run(self) -> None:
        """Sweep, then wait, until cancelled; a failing pass (the database or the file
        store out of reach) is logged and the next one tries again."""
        failures = 0
        while True:
            try:
                swept = await asyncio.to_thread(self.sweep)
            except Exception as exc:
                failures += 1
                log_failure("sweeping unfinished uploads", exc, failures)
            else:
                failures = 0
                if swept:
                    logger.info(
                        "swept %d unfinished upload folder(s), %d expired idempotency key(s) "
                        "and %d staged cop(ies)",
                        swept.folders,
                        swept.keys,
                        swept.staged,
                    )
            await asyncio.sleep(self.pause)

    def sweep(self) -> Swept:
        """One pass (blocking): at most BATCH removals of each kind."""
        swept = Swept()
        cutoff = time.time() - self.grace
        if self.shared:
            for folder, marked_at in upload_records.stale_pending(self.engine, cutoff, BATCH):
                # Claimed first, so an upload recorded meanwhile keeps its files; a claimed
                # folder whose removal is cut short is found again (its mark is the oldest).
                if marked_at == upload_records.SWEEPING or upload_records.claim_pending(
                    self.engine, folder, marked_at
                ):
                    self.files.delete_folder(folder)
                    upload_records.drop_pending(self.engine, folder)
                    swept.folders += 1
            swept.keys = upload_records.forget_expired_keys(self.engine, BATCH)
        if isinstance(self.files, S3FileStore):
            swept.staged = self._sweep_staging(self.files.staging, cutoff)
        return swept

    def _sweep_staging(self, staging: Path, cutoff: float) -> int:
        """Remove staged upload folders (`KB/UPLOAD`) untouched since `cutoff` whose
        document is not being indexed."""
        stale = [folder for folder in _upload_folders(staging) if _last_touched(folder) < cutoff]
        stale = stale[:BATCH]
        if not stale:
            return 0
        keys = {str(folder.relative_to(staging)): folder for folder in stale}
        busy = self._busy(list(keys))
        for key, folder in keys.items():
            if key not in busy:
                shutil.rmtree(folder, ignore_errors=True)
                _remove_if_empty(folder.parent)
        return len(keys) - len(busy & keys.keys())

    def _busy(self, keys: list[str]) -> set[str]:
        """Those of `keys` whose document is being indexed. (An upload under way is never
        among stale folders: its folder is marked pending before its file is written.)"""
        with reading(self.engine) as db:
            indexing = db.execute(  # as many as jobs in flight in the deployment
                select(documents.c.path).where(documents.c.status == Status.INDEXING.value)
            ).scalars()
            busy = {path.rsplit("/", 1)[0] for path in indexing}
        return busy & set(keys)


def _upload_folders(staging: Path) -> list[Path]:
    """The `KB/UPLOAD` folders under `staging`, in name order."""
    if not staging.is_dir():
        return []
    return [
        upload
        for kb in sorted(staging.iterdir())
        if kb.is_dir() and not kb.is_symlink()
        for upload in sorted(kb.iterdir())
        if upload.is_dir() and not upload.is_symlink()
    ]


def _last_touched(folder: Path) -> float:
    """The latest modification time of `folder` and the files in it."""
    try:
        times = [folder.stat().st_mtime]
        times.extend(entry.stat().st_mtime for entry in folder.iterdir())
    except FileNotFoundError:  # removed meanwhile: nothing to sweep
        return float("inf")
    return max(times)


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()
