"""Document work off the event loop: parsing and chunking in a worker thread, and for a
large file in a child process.

Parsers and chunkers are async generators that do their CPU work inline, so iterating
them on the service's loop would stall every request while a file is cut up.
`OffloadedChunker` runs the section-and-chunk pipeline elsewhere and hands the chunks
over in batches, with back-pressure:
- a file under `PROCESS_BYTES` in a thread, on a private event loop: no process to start,
  and its Python work is over before it could hold up requests for long;
- a larger file in a child process (`chunk_file_in_child`): there the parsers' and the
  chunker's Python work, seconds of it, no longer competes for the service's GIL, and a
  parser that crashes on a hostile file ends only the child. Where no child can start
  (not POSIX), large files take the thread too.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import TypeVar

from archivist._util.thread_priority import lower_this_thread
from archivist.rag.chunker.base import ChunkerBase
from archivist.rag.chunker.child_process import (
    ChildLimits,
    child_processes_available,
    chunk_file_in_child,
)
from archivist.rag.document import Chunk, Section
from archivist.rag.parser.base import ParserBase
from archivist.validation import check_non_negative_int

T = TypeVar("T")

_DONE = object()

PROCESS_BYTES = 1024 * 1024
"""Files of this many bytes or more are parsed and chunked in a child process."""


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


class OffloadedChunker(ChunkerBase):
    """`inner`, with parsing and chunking run off the loop, `niceness` steps nicer than the
    loop so requests get the CPU first: in a thread, or in a child process within `limits`
    for a file of `process_bytes` or more (see the module's docstring). A service sends
    every file to a child (`process_bytes=0`), so no upload can take its memory."""

    def __init__(
        self,
        inner: ChunkerBase,
        niceness: int = 0,
        process_bytes: int = PROCESS_BYTES,
        limits: ChildLimits | None = None,
    ) -> None:
        self.inner = inner
        self.niceness = check_non_negative_int(niceness, "niceness")
        self.process_bytes = check_non_negative_int(process_bytes, "process_bytes")
        self.limits = limits
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

    async def chunk_file(self, parser: ParserBase, path: str, name: str) -> AsyncIterator[Chunk]:
        if child_processes_available() and _size(path) >= self.process_bytes:
            chunks = chunk_file_in_child(
                self.inner, parser, path, name, niceness=self.niceness, limits=self.limits
            )
        else:
            chunks = iterate_in_thread(
                lambda: self.inner.chunk_file(parser, path, name), niceness=self.niceness
            )
        async for chunk in chunks:
            yield chunk


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:  # the parser, in the thread, reports it with the file's name
        return 0


async def _one(chunker: ChunkerBase, sections: list[Section]) -> AsyncIterator[Chunk]:
    for chunk in await chunker.chunk(sections):
        yield chunk
