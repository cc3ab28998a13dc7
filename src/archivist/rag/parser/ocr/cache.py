"""`OcrCache`: the text of pages already read, on disk, keyed by the page's pixels.

Indexing a file again, or rebuilding a knowledge base, then reads no page twice. A key is a
sha256 of the engine's identity and the page's size and pixels, so another engine, version,
language set or rendering is a miss, never a wrong hit. Safe for several processes (SQLite
in WAL mode): a service's parse children share one cache.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

from archivist.rag.parser.ocr.engine import OcrResult, PageImage

FILENAME = "ocr.sqlite3"

_SCHEMA = "CREATE TABLE IF NOT EXISTS pages (key TEXT PRIMARY KEY, text TEXT, confidence REAL)"


class OcrCache:
    """Pages read by an engine, in `directory/ocr.sqlite3`."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / FILENAME
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OcrCache({str(self.directory)!r})"

    def __getstate__(self) -> dict[str, object]:
        return {"directory": self.directory}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["directory"])  # type: ignore[misc]

    @staticmethod
    def key(identity: str, page: PageImage) -> str:
        """The cache key of `page` as read by the engine of `identity`."""
        digest = hashlib.sha256(f"{identity}\0{page.width}x{page.height}\0".encode())
        digest.update(page.pixels)
        return digest.hexdigest()

    def get(self, key: str) -> OcrResult | None:
        """The result stored under `key`, or None."""
        with self._lock:
            row = (
                self._db()
                .execute("SELECT text, confidence FROM pages WHERE key = ?", (key,))
                .fetchone()
            )
        return None if row is None else OcrResult(text=row[0], confidence=row[1])

    def put(self, key: str, result: OcrResult) -> None:
        """Store `result` under `key`."""
        with self._lock:
            db = self._db()
            db.execute(
                "INSERT OR REPLACE INTO pages VALUES (?, ?, ?)",
                (key, result.text, result.confidence),
            )
            db.commit()

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(_SCHEMA)
            connection.commit()
            self._connection = connection
        return self._connection
