"""Concurrent searches share embedding calls: queries that arrive while one call runs are
embedded together in the next, so 50 clients cost a few model calls instead of 50."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from archivist.embedding import EmbeddingModelBase
from archivist.embedding.base import EmbeddingInput
from archivist.embedding.response import EmbeddingResponse

_Waiting = tuple[Sequence[EmbeddingInput], asyncio.Future[EmbeddingResponse]]


class QueryBatcher:
    """Embeds query lists through `model`, batching the ones that wait at the same time.

    An idle batcher adds no delay: the first query starts a call at once; queries arriving
    meanwhile form the next call (at most `max_batch` inputs). A failed call fails every
    search that shared it; the service only sends non-empty text queries.
    """

    def __init__(self, model: EmbeddingModelBase, max_batch: int = 64) -> None:
        self.model = model
        self.max_batch = max_batch
        self._waiting: list[_Waiting] = []
        self._drainer: asyncio.Task[None] | None = None

    async def embed(self, inputs: Sequence[EmbeddingInput]) -> EmbeddingResponse:
        """The query vectors of `inputs`, in order."""
        future: asyncio.Future[EmbeddingResponse] = asyncio.get_running_loop().create_future()
        self._waiting.append((inputs, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._waiting:
            batch: list[_Waiting] = []
            size = 0
            while self._waiting:
                entry = self._waiting[0]
                if batch and size + len(entry[0]) > self.max_batch:
                    break
                self._waiting.pop(0)
                batch.append(entry)
                size += len(entry[0])
            flat = [item for inputs, _ in batch for item in inputs]
            try:
                response = await self.model(flat, input_type="query")
            except Exception as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            except BaseException:
                for _, future in batch:
                    with contextlib.suppress(asyncio.InvalidStateError):
                        future.cancel()
                raise
            start = 0
            for inputs, future in batch:
                vectors = response.embeddings[start : start + len(inputs)]
                start += len(inputs)
                if not future.done():
                    future.set_result(EmbeddingResponse(embeddings=vectors))
