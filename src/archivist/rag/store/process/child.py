"""The store process's side: open the store, then answer calls as they come, concurrently.

Run as `python -P -m archivist.rag.store.process.child CALLER_PID`; the caller writes frames
(`archivist._util.frames`) on its stdin and reads them from its stdout:

- first `(store_class, options)`; the child answers `("ready", None)` once
  `store_class(**options)` is entered, or `("failed", error)`;
- `("call", id, method, args, kwargs, streamed)` runs `store.method(*args, **kwargs)`; with
  `streamed`, the call's last positional argument is a stream of batches the child asks for
  one at a time with `("more", id)`, answered by `("batch", id, records)`, `("end", id)` or
  `("fail", id, error)`;
- `("cancel", id)` cancels a call; each call ends with `("result", id, value)` or
  `("error", id, error)`.

The store closes and the child exits when its stdin ends (the caller closed it). On Linux
the child is also killed the moment its caller dies (`PR_SET_PDEATHSIG`), as the store
would have died inside the caller: the directory's lock goes with it, so a restarted
caller opens the store at once instead of waiting for an orphan to finish its call.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

from archivist._util import frames
from archivist._util.thread_priority import answer_sooner
from archivist.rag.record import VectorRecord
from archivist.rag.store.base import VectorStoreBase


class _Calls:
    """The calls in flight and the batches their streams are waiting for."""

    def __init__(self, store: VectorStoreBase, send: asyncio.Queue[bytes | None]) -> None:
        self.store = store
        self._send = send
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._batches: dict[int, asyncio.Queue[tuple[Any, ...]]] = {}

    def post(self, message: object) -> None:
        self._send.put_nowait(frames.encode(message))

    def start(
        self, call: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], streamed: bool
    ) -> None:
        if streamed:
            self._batches[call] = asyncio.Queue()
            args = (*args, self._stream(call))
        self._tasks[call] = asyncio.create_task(self._run(call, method, args, kwargs))

    def cancel(self, call: int) -> None:
        task = self._tasks.get(call)
        if task is not None:
            task.cancel()

    def deliver(self, message: tuple[Any, ...]) -> None:
        waiting = self._batches.get(message[1])
        if waiting is not None:
            waiting.put_nowait(message)

    async def stop(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def _run(
        self, call: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        try:
            value = await getattr(self.store, method)(*args, **kwargs)
        except asyncio.CancelledError:
            self.post(("error", call, asyncio.CancelledError()))
        except Exception as error:  # the caller raises it
            self.post(("error", call, frames.portable(error)))
        else:
            try:
                self.post(("result", call, value))
            except Exception as error:  # an answer that does not pickle still ends the call
                failure = RuntimeError(f"the store's answer to {method} cannot be sent: {error}")
                self.post(("error", call, failure))
        finally:
            self._tasks.pop(call, None)
            self._batches.pop(call, None)

    async def _stream(self, call: int) -> AsyncIterator[list[VectorRecord]]:
        waiting = self._batches[call]
        while True:
            self.post(("more", call))
            message = await waiting.get()
            if message[0] == "batch":
                yield message[2]
            elif message[0] == "fail":
                raise message[2]
            else:
                return


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Open the store the first frame names and answer calls until `reader` ends."""
    send: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def write() -> None:
        while (frame := await send.get()) is not None:
            writer.write(frame)
            await writer.drain()

    writing = asyncio.create_task(write())
    try:
        store_class, options = await frames.read(reader)
        try:
            store = store_class(**options)
            await store.__aenter__()
        except Exception as error:
            send.put_nowait(frames.encode(("failed", frames.portable(error))))
            return
        calls = _Calls(store, send)
        try:
            calls.post(("ready", None))
            while True:
                try:
                    message: tuple[Any, ...] = await frames.read(reader)
                except asyncio.IncompleteReadError:
                    break
                kind = message[0]
                if kind == "call":
                    calls.start(*message[1:])
                elif kind == "cancel":
                    calls.cancel(message[1])
                else:
                    calls.deliver(message)
        finally:
            await calls.stop()
            await store.aclose()
    finally:
        send.put_nowait(None)  # after every answer already queued
        await writing


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when `parent` (the caller) dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the request was made
        os._exit(1)


async def _main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, channel)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    # Whatever a library prints goes to stderr, the caller's: stdout carries frames alone.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    await serve(reader, writer)


if __name__ == "__main__":
    _die_with(int(sys.argv[1]))
    answer_sooner()  # a search waits less behind a write's Python work
    asyncio.run(_main())
