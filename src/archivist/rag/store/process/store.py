"""`ProcessStore`: any store, run in a child process, behind the same API.

An engine called in-process holds the caller's GIL for as long as each call runs: Qdrant
Edge's binding holds it while it indexes a segment (seconds), and the store's own BM25
counting is Python. In a service that stops every request on the event loop, health checks
included. Run in a child, that work competes with the caller for the CPU only; the caller's
loop waits for nothing but the answers it asked for. Each call costs a round trip of its
pickled arguments and answer.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import sys
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import suppress
from typing import Any, ClassVar

from archivist._util import frames
from archivist._util.exit_status import describe_exit
from archivist.errors import StoreError
from archivist.rag.document import Chunk
from archivist.rag.record import DocumentSummary, VectorRecord, VectorSearchResult
from archivist.rag.store.base import MetadataFilter, VectorStoreBase
from archivist.rag.store.core.arguments import SearchMode
from archivist.rag.store.core.generations import GenerationInfo

_CHILD = "archivist.rag.store.process.child"
_STREAM_LIMIT = 1 << 20
_CLOSE_SECONDS = 60.0
"""How long closing waits for the child to close its store (flushes) before killing it."""

_Message = tuple[Any, ...]


class StoreProcessError(StoreError):
    """The store process stopped, or could not be started."""


class ProcessStore(VectorStoreBase):
    """`store_class(**options)` in a child process: make one with `ProcessStore.of`.

    Every call is answered by the child; arguments, answers and errors travel pickled, so
    errors raise here as the store raised them. Calls run concurrently in the child, and a
    cancelled call is cancelled there. The store's class and options must pickle (the
    library's do). A child that dies fails the calls in flight with `StoreProcessError` and
    is started again by the next call; closing this store closes the child's. On Linux the
    child dies with this process, as the store would have.
    """

    store_class: ClassVar[type[VectorStoreBase]]
    """The class run in the child; its `capabilities` are this class's."""

    @staticmethod
    def of(store_class: type[VectorStoreBase], /, **options: Any) -> ProcessStore:
        """A store (not yet entered) running `store_class(**options)` in a child process."""
        return _subclass(store_class)(options)

    def __init__(self, options: dict[str, Any]) -> None:
        if not hasattr(type(self), "store_class"):
            raise TypeError("make a ProcessStore with ProcessStore.of(store_class, ...)")
        self._options = options
        self._process: asyncio.subprocess.Process | None = None
        self._reading: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[_Message]] = {}
        self._wanted: dict[int, asyncio.Queue[None]] = {}
        self._ids = itertools.count()
        self._starting = asyncio.Lock()
        self._closed = False

    async def __aenter__(self) -> ProcessStore:
        await self._running()
        return self

    async def aclose(self) -> None:
        """Close the child's store and wait for the child to end (killed past a minute)."""
        self._closed = True
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), _CLOSE_SECONDS)
        except TimeoutError:
            process.kill()
            await process.wait()
        finally:
            if self._reading is not None:
                await self._reading

    async def _running(self) -> asyncio.subprocess.Process:
        """The child, started (and its store entered) if there is none alive."""
        async with self._starting:
            if self._closed:
                raise StoreProcessError("the store is closed")
            if self._process is not None and self._process.returncode is None:
                return self._process
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-P",  # the working directory is not on the child's import path
                "-m",
                _CHILD,
                str(os.getpid()),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=_STREAM_LIMIT,
            )
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(frames.encode((self.store_class, self._options)))
                kind, value = await frames.read(process.stdout)
            except (asyncio.IncompleteReadError, ConnectionError):
                code = await process.wait()
                raise StoreProcessError(
                    f"the store process stopped as it started ({describe_exit(code)})"
                ) from None
            except BaseException:
                process.kill()
                await process.wait()
                raise
            if kind == "failed":
                await process.wait()
                raise value
            self._process = process
            self._reading = asyncio.create_task(self._read(process))
            return process

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        """Hand each answer to its call until the child's stdout ends, then fail the rest."""
        assert process.stdout is not None
        while True:
            try:
                message: _Message = await frames.read(process.stdout)
            except asyncio.IncompleteReadError:
                break
            if message[0] == "more":
                wanted = self._wanted.get(message[1])
                if wanted is not None:
                    wanted.put_nowait(None)
                continue
            answer = self._pending.get(message[1])
            if answer is not None and not answer.done():
                answer.set_result(message)
        code = await process.wait()
        stopped = StoreProcessError(f"the store process stopped ({describe_exit(code)})")
        for answer in self._pending.values():
            if not answer.done():
                answer.set_exception(stopped)

    async def _send(self, process: asyncio.subprocess.Process, message: _Message) -> None:
        assert process.stdin is not None
        try:
            process.stdin.write(frames.encode(message))
            await process.stdin.drain()
        except ConnectionError:
            raise StoreProcessError("the store process stopped") from None

    async def _call(
        self,
        method: str,
        *args: Any,
        batches: AsyncIterable[list[VectorRecord]] | None = None,
        **kwargs: Any,
    ) -> Any:
        """`store.method(*args, **kwargs)` answered by the child (with `batches` streamed to
        it as its last positional argument)."""
        process = await self._running()
        call = next(self._ids)
        answer: asyncio.Future[_Message] = asyncio.get_running_loop().create_future()
        self._pending[call] = answer
        pump: asyncio.Task[BaseException | None] | None = None
        if batches is not None:
            self._wanted[call] = asyncio.Queue()
            pump = asyncio.create_task(self._pump(process, call, batches))
        try:
            await self._send(process, ("call", call, method, args, kwargs, batches is not None))
            kind, _, value = await answer
        except asyncio.CancelledError:
            if process.returncode is None and process.stdin is not None:
                with suppress(ConnectionError):
                    process.stdin.write(frames.encode(("cancel", call)))
            raise
        finally:
            self._pending.pop(call, None)
            self._wanted.pop(call, None)
            if pump is not None:
                pump.cancel()
                await asyncio.wait([pump])  # its own end; a cancellation of this call propagates
                if not pump.cancelled():
                    pump.exception()  # retrieved: a dead child's error is the call's already
        if kind == "error":
            failed = pump.result() if pump is not None and not pump.cancelled() else None
            raise failed or value  # the batches' own error, as they raised it
        return value

    async def _pump(
        self,
        process: asyncio.subprocess.Process,
        call: int,
        batches: AsyncIterable[list[VectorRecord]],
    ) -> BaseException | None:
        """Send the next batch each time the child asks; the batches' error, if they fail."""
        wanted = self._wanted[call]
        iterator = aiter(batches)
        try:
            while True:
                await wanted.get()
                try:
                    batch = await anext(iterator)
                except StopAsyncIteration:
                    await self._send(process, ("end", call))
                    return None
                except Exception as error:
                    await self._send(process, ("fail", call, frames.portable(error)))
                    return error
                await self._send(process, ("batch", call, list(batch)))
        finally:
            if isinstance(iterator, AsyncIterator) and hasattr(iterator, "aclose"):
                await iterator.aclose()

    async def create_collection(self, name: str, dimensions: int) -> None:
        await self._call("create_collection", name, dimensions)

    async def delete_collection(self, name: str) -> None:
        await self._call("delete_collection", name)

    async def has_collection(self, name: str) -> bool:
        found: bool = await self._call("has_collection", name)
        return found

    async def optimize(self, collection: str) -> None:
        await self._call("optimize", collection)

    async def collection_dimensions(self, name: str) -> int | None:
        dimensions: int | None = await self._call("collection_dimensions", name)
        return dimensions

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        await self._call("insert", collection, list(records))

    async def delete(
        self, collection: str, document_id: str, metadata_filter: MetadataFilter | None = None
    ) -> None:
        await self._call("delete", collection, document_id, metadata_filter)

    async def search(
        self,
        collection: str,
        query_vector: list[float] | None,
        top_k: int = 5,
        metadata_filter: MetadataFilter | None = None,
        **options: Any,
    ) -> list[VectorSearchResult]:
        found: list[VectorSearchResult] = await self._call(
            "search", collection, query_vector, top_k, metadata_filter, **options
        )
        return found

    async def search_modes(self, collection: str) -> tuple[SearchMode, ...]:
        modes: tuple[SearchMode, ...] = await self._call("search_modes", collection)
        return modes

    async def term_layout(self, collection: str) -> int | None:
        layout: int | None = await self._call("term_layout", collection)
        return layout

    async def list_documents(
        self, collection: str, metadata_filter: MetadataFilter | None = None
    ) -> list[DocumentSummary]:
        found: list[DocumentSummary] = await self._call(
            "list_documents", collection, metadata_filter
        )
        return found

    async def document_summary(
        self, collection: str, document_id: str, metadata_filter: MetadataFilter | None = None
    ) -> DocumentSummary | None:
        found: DocumentSummary | None = await self._call(
            "document_summary", collection, document_id, metadata_filter
        )
        return found

    async def list_chunks(
        self,
        collection: str,
        document_id: str,
        offset: int = 0,
        limit: int = 30,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[Chunk]:
        found: list[Chunk] = await self._call(
            "list_chunks", collection, document_id, offset, limit, metadata_filter
        )
        return found

    async def chunk_window(
        self,
        collection: str,
        document_id: str,
        first: int,
        last: int,
        metadata_filter: MetadataFilter | None = None,
    ) -> list[Chunk]:
        found: list[Chunk] = await self._call(
            "chunk_window", collection, document_id, first, last, metadata_filter
        )
        return found

    async def replace_document(
        self,
        collection: str,
        document_id: str,
        batches: AsyncIterable[list[VectorRecord]],
        metadata_filter: MetadataFilter | None = None,
    ) -> int:
        written: int = await self._call(
            "replace_document",
            collection,
            document_id,
            batches=batches,
            metadata_filter=metadata_filter,
        )
        return written

    async def document_generations(
        self,
        collection: str,
        metadata_filter: MetadataFilter | None = None,
        document_id: str | None = None,
    ) -> list[GenerationInfo]:
        found: list[GenerationInfo] = await self._call(
            "document_generations", collection, metadata_filter, document_id
        )
        return found

    async def repair_document(
        self, collection: str, document_id: str, metadata_filter: MetadataFilter | None = None
    ) -> list[GenerationInfo]:
        removed: list[GenerationInfo] = await self._call(
            "repair_document", collection, document_id, metadata_filter
        )
        return removed


@functools.cache
def _subclass(store_class: type[VectorStoreBase]) -> type[ProcessStore]:
    """The ProcessStore class declaring `store_class`'s capabilities."""
    if issubclass(store_class, ProcessStore):
        raise TypeError("a ProcessStore already runs its store in a child process")
    return type(
        f"{store_class.__name__}InProcess",
        (ProcessStore,),
        {
            "capabilities": store_class.capabilities,
            "store_class": store_class,
            "__module__": __name__,
            "__doc__": f"{store_class.__name__} run in a child process (see ProcessStore).",
        },
    )
