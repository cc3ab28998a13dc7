"""One file parsed and chunked in a child process, its chunks streamed back in order.

A large file keeps the parsers' and the chunker's Python code busy for seconds, and in the
caller's process that work competes for the GIL with every other thread, such as a
service's event loop. In a child it competes only for the CPU, where a lower priority lets
the caller go first, and a parser that crashes on a hostile file ends only the child.

The child is a fresh interpreter (`python -P -m archivist.rag.chunker.child_process`), not a
fork of a process full of threads, and it never imports the caller's `__main__`. Each
costs a new interpreter's start, so callers send only large files. Its frames are unpickled,
so they are trusted as the caller's own code is. Protocol: the pickled (chunker, parser,
path, name) on its stdin; on its stdout frames of an 8-byte length and a pickled
("chunks", [...]), then ("end", None) or ("error", exception).
"""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import struct
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, BinaryIO

from archivist._util.thread_priority import lower_this_thread
from archivist.errors import DocumentParseError
from archivist.validation import check_non_negative_int

if TYPE_CHECKING:
    from archivist.rag.chunker.base import ChunkerBase
    from archivist.rag.document import Chunk
    from archivist.rag.parser.base import ParserBase

BATCH = 32
"""Chunks per frame from the child."""

_FRAME = struct.Struct("!Q")
_STREAM_LIMIT = 1 << 20


def child_processes_available() -> bool:
    """Whether children can be started here (POSIX; Windows event loops differ)."""
    return os.name == "posix"


async def chunk_file_in_child(
    chunker: ChunkerBase, parser: ParserBase, path: str, name: str, *, niceness: int = 0
) -> AsyncIterator[Chunk]:
    """`chunker.chunk_file(parser, path, name)`, run in a child process `niceness` steps nicer.

    The child is killed when the caller stops reading (break, error, cancel). A child that
    dies (a parser's crash, the OOM killer) is a `DocumentParseError` naming the file; an
    error the parser or chunker raises comes through as it was raised. `chunker` and
    `parser` must pickle (the library's do).
    """
    check_non_negative_int(niceness, "niceness")
    payload = pickle.dumps((chunker, parser, path, name), pickle.HIGHEST_PROTOCOL)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",  # the working directory is not on the child's import path
        "-m",
        __name__,
        str(niceness),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=_STREAM_LIMIT,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(payload)
            await process.stdin.drain()
            process.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the child died before it read its work: reported below with its exit
        while True:
            try:
                header = await process.stdout.readexactly(_FRAME.size)
                body = await process.stdout.readexactly(_FRAME.unpack(header)[0])
            except asyncio.IncompleteReadError:
                code = await process.wait()
                raise DocumentParseError(
                    f"the parser stopped unexpectedly ({_describe(code)})", filename=name
                ) from None
            kind, value = await asyncio.to_thread(pickle.loads, body)  # Python per chunk
            if kind == "chunks":
                for chunk in value:
                    yield chunk
            elif kind == "error":
                raise value
            else:
                return
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _child(niceness: int, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """The child's side: read the work, send batches of chunks, then the end or the error."""
    lower_this_thread(niceness)

    def send(kind: str, value: object) -> None:
        body = pickle.dumps((kind, value), pickle.HIGHEST_PROTOCOL)
        stdout.write(_FRAME.pack(len(body)) + body)
        stdout.flush()

    chunker, parser, path, name = pickle.loads(stdin.read())

    async def pump() -> None:
        batch: list[Chunk] = []
        async for chunk in chunker.chunk_file(parser, path, name):
            batch.append(chunk)
            if len(batch) >= BATCH:
                send("chunks", batch)
                batch = []
        if batch:
            send("chunks", batch)

    try:
        asyncio.run(pump())
    except Exception as exc:  # handed to the caller, raised there
        send("error", _portable(exc, name))
        return
    send("end", None)


def _portable(exc: Exception, name: str) -> Exception:
    """`exc` if it survives pickling, else a DocumentParseError naming file `name`, with the
    error's words."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return DocumentParseError(f"{type(exc).__name__}: {exc}", filename=name)
    return exc


if __name__ == "__main__":
    # The frames get the real stdout alone: whatever a library prints goes to stderr, the
    # caller's (so does a traceback of the child failing to start).
    frames = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    _child(int(sys.argv[1]), sys.stdin.buffer, frames)
