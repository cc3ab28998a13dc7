"""Document work off the event loop: parsing and chunking run in a worker thread.

Parsers and chunkers are async generators that do their CPU work inline, so iterating
them on the service's loop would stall every request while a large file is cut up.
`ThreadedChunker` iterates the whole section-and-chunk pipeline on a private event loop in
a thread and hands the chunks over in batches, with back-pressure.

Threads rather than processes: the chunks go straight to the embedder and store in this
process (no pickling of every Section and Chunk), the tokenizer and parsers are loaded
once, and the heavy parts (tokenizers, pdfium, lxml) release the GIL; the Python parts
hold it for at most the interpreter's switch interval, which keeps the loop answering.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import TypeVar

from archivist.rag.chunker.base import ChunkerBase
from archivist.rag.document import Chunk, Section
from archivist.thread_priority import lower_this_thread
from archivist.validation import check_non_negative_int

T = TypeVar("T")

_DONE = object()


async def iterate_in_thread(
    factory: Callable[[], AsyncIterator[T]], batch: int = 32, depth: int = 4, niceness: int = 0
) -> AsyncIterator[T]:
    """The items of `factory()`, iterated on a private loop in a new thread `niceness` steps
    nicer than the caller (see `lower_this_thread`).

    Items cross in lists of up to `batch`; at most `depth` lists wait, so a fast producer
    never holds a whole file. Stopping early (break, error, cancel) stops the thread.
    """
    loop = asyncio.get_running_loop()
    handed: asyncio.Queue[list[T] | BaseException | object] = asyncio.Queue()
    room = threading.Semaphore(depth)
    stop = threading.Event()

    def hand(item: list[T] | BaseException | object) -> bool:
        while not room.acquire(timeout=0.2):
            if stop.is_set():
                return False
        if stop.is_set():
            return False
        loop.call_soon_threadsafe(handed.put_nowait, item)
        return True

    async def pump() -> None:
        items: list[T] = []
        try:
            async for item in factory():
                items.append(item)
                if len(items) >= batch:
                    if not hand(items):
                        return
                    items = []
            if (not items or hand(items)) and not stop.is_set():
                hand(_DONE)
        except BaseException as exc:  # handed to the consumer, raised there
            hand(exc)

    def run() -> None:
        lower_this_thread(niceness)
        asyncio.run(pump())

    thread = threading.Thread(target=run, name="archivist-parse")
    thread.daemon = True
    thread.start()
    try:
        while True:
            got = await handed.get()
            room.release()
            if got is _DONE:
                return
            if isinstance(got, BaseException):
                raise got
            assert isinstance(got, list)
            for item in got:
                yield item
    finally:
        stop.set()


class ThreadedChunker(ChunkerBase):
    """`inner`, with the parser's section stream and its chunking run off the loop, in a
    thread `niceness` steps nicer than the loop's, so requests get the CPU first."""

    def __init__(self, inner: ChunkerBase, niceness: int = 0) -> None:
        self.inner = inner
        self.niceness = check_non_negative_int(niceness, "niceness")
        self.parameters = getattr(inner, "parameters", None)

    async def chunk(self, sections: list[Section]) -> list[Chunk]:
        return [
            chunk
            async for chunk in iterate_in_thread(
                lambda: _one(self.inner, sections), niceness=self.niceness
            )
        ]

    async def chunk_stream(self, sections: AsyncIterable[Section]) -> AsyncIterator[Chunk]:
        async for chunk in iterate_in_thread(
            lambda: self.inner.chunk_stream(sections), niceness=self.niceness
        ):
            yield chunk


async def _one(chunker: ChunkerBase, sections: list[Section]) -> AsyncIterator[Chunk]:
    for chunk in await chunker.chunk(sections):
        yield chunk
