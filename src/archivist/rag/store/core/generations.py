"""Generations: the writes that stored a document's chunks, and how to tell a whole document.

Every write (one `insert` call, one `replace_document`) stamps its chunks with a generation id.
Normally a document holds one generation; a process killed during a re-insert can leave the old
generation beside part (or all) of the new one. `document_problem` says whether the chunks of a
document form exactly one whole set, and `repair_plan` which generations to drop when they don't.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterable, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager

from pydantic import BaseModel, ConfigDict

from archivist.rag.record import VectorRecord


def new_generation() -> str:
    """A fresh write id that sorts after every id made earlier (32 hex digits: time, random)."""
    return f"{time.time_ns():016x}{uuid.uuid4().hex[:16]}"


class GenerationInfo(BaseModel):
    """The chunks one write stored for one document (within the reader's metadata filter)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    document_id: str
    generation: str
    chunk_indexes: list[int]
    """The stored chunk indexes, sorted (a repeated index appears repeatedly)."""
    total_chunks: list[int]
    """The distinct `total_chunks` values its chunks claim, sorted (one, normally)."""

    @property
    def chunk_count(self) -> int:
        """How many chunks the write left."""
        return len(self.chunk_indexes)

    @property
    def complete(self) -> bool:
        """Whether this write alone holds chunks 0..N-1 exactly once, N = their total_chunks."""
        return len(self.total_chunks) == 1 and self.chunk_indexes == list(
            range(self.total_chunks[0])
        )


def document_problem(generations: Sequence[GenerationInfo]) -> str | None:
    """Why the chunks of one document (all its generations) are not one whole set, or None.

    A document written by several `insert` calls that together hold chunks 0..N-1 once each is
    whole; an old generation beside a newer one (complete or not) never is.
    """
    if not generations:
        return None
    indexes = sorted(i for g in generations for i in g.chunk_indexes)
    totals = sorted({t for g in generations for t in g.total_chunks})
    whole = len(totals) == 1 and indexes == list(range(totals[0]))
    if whole:
        return None
    if len(generations) > 1 and len(indexes) != len(set(indexes)):
        parts = ", ".join(
            f"{g.generation}: {g.chunk_count}/{'|'.join(map(str, g.total_chunks))}"
            for g in generations
        )
        return f"{len(generations)} generations visible ({parts})"
    if len(totals) != 1:
        return f"chunks disagree on total_chunks ({', '.join(map(str, totals))})"
    missing = sorted(set(range(totals[0])) - set(indexes))
    return f"holds {len(indexes)} of {totals[0]} chunks (missing {missing[:10]})"


def repair_plan(
    generations: Sequence[GenerationInfo],
) -> tuple[GenerationInfo | None, list[GenerationInfo]]:
    """(the generation to keep, the generations to remove) for one document.

    A whole document is left alone. Otherwise the newest complete generation is kept (the old
    version when a re-insert was cut short, the new one when only its clean-up was) and every
    other generation goes; with no complete generation the whole document goes.
    """
    if document_problem(generations) is None:
        return None, []
    complete = [g for g in generations if g.complete]
    keep = max(complete, key=lambda g: g.generation) if complete else None
    return keep, [g for g in generations if g is not keep]


async def write_generation(
    batches: AsyncIterable[list[VectorRecord]],
    *,
    lock: AbstractAsyncContextManager[object],
    write: Callable[[list[VectorRecord], str], Awaitable[int]],
    drop_older: Callable[[str], Awaitable[None]],
    discard: Callable[[str], Awaitable[None]],
) -> int:
    """The crash-safe replace every store runs: under the document's `lock`, `write` each
    batch as one new generation, then `drop_older` generations; if anything fails, `discard`
    the new one so the old version stays whole. Returns the chunks written.

    The generation is made under the lock, so successive writes of a document sort in the
    order they were written (repair keeps the newest complete one).
    """
    async with lock:
        generation = new_generation()
        written = 0
        try:
            async for batch in batches:
                written += await write(batch, generation)
            await drop_older(generation)
        except BaseException as error:
            await discard_noting(discard, generation, error)
            raise
    return written


async def discard_noting(
    discard: Callable[[str], Awaitable[None]], generation: str, error: BaseException
) -> None:
    """`discard(generation)` after a failed write, noting on `error` if even that fails."""
    try:
        await discard(generation)
    except Exception as cleanup_error:
        error.add_note(f"removing the partly written chunks failed too: {cleanup_error!r}")


async def repair_generations(
    *,
    lock: AbstractAsyncContextManager[object],
    generations: Callable[[], Awaitable[list[GenerationInfo]]],
    remove: Callable[[GenerationInfo], Awaitable[None]],
) -> list[GenerationInfo]:
    """Make one document whole again (`repair_plan`); returns what was removed. Holds the
    document's `lock`, so a write of it in flight finishes first and is never mistaken for a
    leftover."""
    async with lock:
        _, stale = repair_plan(await generations())
        for generation in stale:
            await remove(generation)
    return stale
