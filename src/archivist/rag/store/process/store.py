"""`ProcessStore`: any store, run in a child process, behind the same API.

An engine called in-process holds the caller's GIL for as long as each call runs: Qdrant
Edge's binding holds it while it indexes a segment (seconds), and the store's own BM25
counting is Python. In a service that stops every request on the event loop, health checks
included. Run in a child, that work competes with the caller for the CPU only; the caller's
loop waits for nothing but the answers it asked for. Each call costs a round trip of its
pickled arguments and answer.
"""

from __future__ import annotations

import abc
import asyncio
import functools
import itertools
import os
import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from contextlib import suppress
from typing import Any, ClassVar, TypeVar

from archivist._util import frames
from archivist._util.exit_status import describe_exit
from archivist.errors import StoreError
from archivist.rag.record import VectorRecord
from archivist.rag.store.base import STORE_METHODS, MetadataFilter, VectorStoreBase

_CHILD = "archivist.rag.store.process.child"
_STREAM_LIMIT = 1 << 20
_CLOSE_SECONDS = 60.0
"""How long closing waits for the child to close its store (flushes) before killing it."""

_Message = tuple[Any, ...]


class StoreProcessError(StoreError):
    """The store process stopped, or could not be started."""


def _forwarder(name: str) -> Callable[..., Awaitable[Any]]:
    """The contract method `name`, answered by the child."""

    async def forward(self: ProcessStore, *args: Any, **kwargs: Any) -> Any:
        return await self._call(name, *args, **kwargs)

    # The contract's name, docstring and signature, but not its abstract mark (`updated=()`).
    return functools.wraps(getattr(VectorStoreBase, name), updated=())(forward)


_Store = TypeVar("_Store", bound=type[VectorStoreBase])


def _forwarding(cls: _Store) -> _Store:
    """`cls` with a forwarder for each contract method it does not define itself."""
    for name in STORE_METHODS:
        if name not in vars(cls):
            setattr(cls, name, _forwarder(name))
    abc.update_abstractmethods(cls)
    return cls


@_forwarding
class ProcessStore(VectorStoreBase):
    """`store_class(**options)` in a child process: make one with `ProcessStore.of`.

    Every contract method (`STORE_METHODS`) is answered by the child; arguments, answers and
    errors travel pickled, so errors raise here as the store raised them. Calls run
    concurrently in the child, and a cancelled call is cancelled there. The store's class and
    options must pickle (the library's do). A child that dies fails the calls in flight with
    `StoreProcessError` and is started again by the next call; closing this store closes the
    child's. On Linux the child dies with this process, as the store would have.
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

    async def replace_document(
        self,
        collection: str,
        document_id: str,
        batches: AsyncIterable[list[VectorRecord]],
        metadata_filter: MetadataFilter | None = None,
    ) -> int:
        """The contract's `replace_document`, with `batches` sent as the child asks for them."""
        written: int = await self._call(
            "replace_document",
            collection,
            document_id,
            batches=batches,
            metadata_filter=metadata_filter,
        )
        return written


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
