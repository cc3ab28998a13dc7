"""`CachedEmbeddingModel`: an on-disk cache in front of any embedding model.

Re-indexing unchanged content then costs no model calls. Entries are keyed by a sha256 of
the model's identity (model, dimensions and settings that change vectors), the input type
and the input itself, so a changed model, dimension or input type is a miss, never a wrong hit.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import threading
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path

from archivist._util.off_loop import off_loop
from archivist.embedding.base import BatchItem, EmbeddingInput, EmbeddingModelBase, InputType
from archivist.embedding.response import EmbeddingResponse, EmbeddingUsage
from archivist.embedding.tokenizer import ModelTokenizer
from archivist.message import Base64Source

_FILENAME = "embeddings.sqlite3"
_LOOKUP_CHUNK = 500  # stays under SQLite's bound-parameter limit on old builds


class CachedEmbeddingModel(EmbeddingModelBase):
    """Wraps `inner`; only inputs not cached yet reach it, all in one call.

    Vectors are stored as float32 in `cache_dir/embeddings.sqlite3`, and every vector this
    wrapper returns is float32-rounded, so hits and misses give identical results.
    `usage.cached_inputs` counts the inputs that did not reach the inner model. A URLSource
    is keyed by its URL, not by what the URL serves. Safe for concurrent use in one process.
    """

    def __init__(self, inner: EmbeddingModelBase, cache_dir: str | Path) -> None:
        if not isinstance(inner, EmbeddingModelBase):
            raise TypeError(f"inner must be an EmbeddingModelBase, got {type(inner).__name__}")
        super().__init__(
            model=inner.model,
            dimensions=None,
            supports_multimodal=inner.supports_multimodal,
            batch_size=inner.batch_size,
            max_concurrency=inner.max_concurrency,
            max_retries=0,
        )
        self.inner = inner
        self.totals = EmbeddingUsage()
        """Usage summed over every call, `cached_inputs` being those the cache served."""
        directory = Path(cache_dir)
        if directory.exists() and not directory.is_dir():
            raise NotADirectoryError(f"cache_dir is not a directory: {directory}")
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / _FILENAME
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r}, cache_dir={str(self.path.parent)!r})"

    def _detect_dimensions(self) -> int:
        return self.inner.dimensions

    @property
    def cache_identity(self) -> str:
        return self.inner.cache_identity

    def chunk_tokenizer(self) -> ModelTokenizer | None:
        return self.inner.chunk_tokenizer()

    def _check_inputs(
        self, inputs: Sequence[EmbeddingInput], input_type: InputType
    ) -> list[BatchItem]:
        return self.inner._check_inputs(inputs, input_type)

    async def _embed_items(
        self, items: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        keys = self._keys(items, input_type)
        found = await asyncio.to_thread(self._lookup, set(keys))
        to_embed: dict[bytes, BatchItem] = {}
        for key, item in zip(keys, items, strict=True):
            if key not in found:
                to_embed.setdefault(key, item)
        usage = EmbeddingUsage()
        fresh_vectors: list[list[float]] = []
        if to_embed:
            fresh = await self.inner(list(to_embed.values()), input_type)
            fresh_vectors, usage = fresh.embeddings, fresh.usage

        def stored() -> list[list[float]]:  # Python per vector
            new = {
                key: array("f", vector) for key, vector in zip(to_embed, fresh_vectors, strict=True)
            }
            if new:
                self._store(new.items())
            found.update(new)
            return [found[key].tolist() for key in keys]

        embeddings = await off_loop(stored, len(keys))
        usage = usage + EmbeddingUsage(cached_inputs=len(items) - len(to_embed))
        self.totals = self.totals + usage
        return EmbeddingResponse(embeddings=embeddings, usage=usage)

    def _keys(self, items: Sequence[BatchItem], input_type: InputType) -> list[bytes]:
        prefix = hashlib.sha256()
        for part in (self.model, str(self.dimensions), self.cache_identity, input_type):
            _feed(prefix, part)
        keys: list[bytes] = []
        for item in items:
            digest = prefix.copy()
            if isinstance(item, str):
                content: tuple[str, ...] = ("text", item)
            elif isinstance(item.source, Base64Source):
                content = ("base64", item.source.media_type, item.source.data)
            else:
                content = ("url", item.source.media_type, item.source.url)
            for part in content:
                _feed(digest, part)
            keys.append(digest.digest())
        return keys

    def _db(self) -> sqlite3.Connection:
        """The open connection; callers hold `_lock`."""
        if self._connection is None:
            connection = sqlite3.connect(self.path, check_same_thread=False)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS embeddings "
                "(key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID"
            )
            connection.commit()
            self._connection = connection
        return self._connection

    def _lookup(self, keys: set[bytes]) -> dict[bytes, array[float]]:
        expected_bytes = self.dimensions * 4
        found: dict[bytes, array[float]] = {}
        ordered = list(keys)
        with self._lock:
            db = self._db()
            for start in range(0, len(ordered), _LOOKUP_CHUNK):
                chunk = ordered[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", chunk
                )
                for key, blob in rows:
                    if len(blob) == expected_bytes:  # anything else is a damaged entry: a miss
                        found[key] = array("f", blob)
        return found

    def _store(self, entries: Iterable[tuple[bytes, array[float]]]) -> None:
        with self._lock:
            db = self._db()
            db.executemany(
                "INSERT OR REPLACE INTO embeddings (key, vector) VALUES (?, ?)",
                [(key, vector.tobytes()) for key, vector in entries],
            )
            db.commit()

    async def aclose(self) -> None:
        """Close the cache file and the inner model; the next call reopens them."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
        await self.inner.aclose()


def _feed(digest: hashlib._Hash, part: str) -> None:
    """Add one length-prefixed field, so no two different field lists hash alike."""
    data = part.encode("utf-8", "surrogatepass")
    digest.update(len(data).to_bytes(8, "big"))
    digest.update(data)
