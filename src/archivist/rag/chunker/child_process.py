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

`ChildLimits` bound what one file may cost: the child's address space and CPU time are
operating-system limits set in the child (`RLIMIT_AS`, `RLIMIT_CPU`), and the time spent
waiting for it is counted by the caller; a file over a limit fails with an error naming it,
and the caller's own memory never holds more of it than a few batches of chunks. OCR's
models get their own reserve above the parsing limit, claimed when the file's first page is
read by OCR (`archivist._util.address_space`), so a file without scans keeps the tight limit.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pickle
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

from archivist._util import address_space, frames
from archivist._util.exit_status import describe_exit
from archivist._util.thread_priority import lower_this_thread
from archivist.errors import DocumentParseError, InvalidArgumentError
from archivist.validation import check_non_negative_int

if TYPE_CHECKING:
    from archivist.rag.chunker.base import ChunkerBase
    from archivist.rag.document import Chunk
    from archivist.rag.parser.base import ParserBase

BATCH = 32
"""Chunks per frame from the child."""

_STREAM_LIMIT = 1 << 20
_MIB = 1024 * 1024
_MEMORY_SHARE = 0.9
"""An error in a child whose address space came this close to its limit is the limit's."""


@dataclass(frozen=True)
class ChildLimits:
    """What parsing and chunking one file may cost (None: no bound).

    `memory_bytes` caps the child's address space, `ocr_memory_bytes` is added to it once
    OCR starts reading the file (its engine's models), `cpu_seconds` caps its CPU time, and
    `wall_seconds` the time the caller waits for its chunks (not the time the caller takes
    to use them).
    """

    memory_bytes: int | None = None
    cpu_seconds: int | None = None
    wall_seconds: float | None = None
    ocr_memory_bytes: int | None = None

    def __post_init__(self) -> None:
        for name in ("memory_bytes", "cpu_seconds", "ocr_memory_bytes"):
            value = getattr(self, name)
            if value is not None:
                check_non_negative_int(value, name)
        if self.wall_seconds is not None and not self.wall_seconds > 0:
            raise InvalidArgumentError(
                f"wall_seconds must be above 0, got {self.wall_seconds!r}",
                argument="wall_seconds",
            )

    def memory_words(self, ocr_started: bool | None = None) -> str:
        """The memory limit as the errors name it: with OCR's reserve when `ocr_started`, or
        both figures when it is not known (None)."""
        base = (self.memory_bytes or 0) / _MIB
        reserve = (self.ocr_memory_bytes or 0) / _MIB
        if not reserve or ocr_started is False:
            return f"{base:g} MiB memory limit"
        if ocr_started:
            return (
                f"{base + reserve:g} MiB memory limit ({base:g} MiB for parsing and "
                f"{reserve:g} MiB for OCR)"
            )
        return f"{base:g} MiB memory limit ({base + reserve:g} MiB once OCR starts)"


def child_processes_available() -> bool:
    """Whether children can be started here (POSIX; Windows event loops differ)."""
    return os.name == "posix"


async def chunk_file_in_child(
    chunker: ChunkerBase,
    parser: ParserBase,
    path: str,
    name: str,
    *,
    niceness: int = 0,
    limits: ChildLimits | None = None,
) -> AsyncIterator[Chunk]:
    """`chunker.chunk_file(parser, path, name)`, run in a child process `niceness` steps nicer
    and within `limits`.

    The child is killed when the caller stops reading (break, error, cancel) or a limit is
    passed. A child that dies (a parser's crash, the OOM killer) or passes a limit is a
    `DocumentParseError` naming the file (and the limit); an error the parser or chunker
    raises comes through as it was raised. `chunker` and `parser` must pickle (the
    library's do).
    """
    check_non_negative_int(niceness, "niceness")
    limits = limits or ChildLimits()
    payload = pickle.dumps((chunker, parser, path, name), pickle.HIGHEST_PROTOCOL)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",  # the working directory is not on the child's import path
        "-m",
        __name__,
        str(niceness),
        str(limits.memory_bytes or 0),
        str(limits.cpu_seconds or 0),
        str(limits.ocr_memory_bytes or 0),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=_STREAM_LIMIT,
        # Few malloc arenas: each thread's arena reserves address space the limit counts.
        env={**os.environ, "MALLOC_ARENA_MAX": "2"},
    )
    waited = 0.0
    try:
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(payload)
            await process.stdin.drain()
            process.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the child died before it read its work: reported below with its exit
        while True:
            started = time.monotonic()
            left = None if limits.wall_seconds is None else limits.wall_seconds - waited
            try:
                async with asyncio.timeout(left):
                    body = await frames.read_body(process.stdout)
            except TimeoutError:
                raise DocumentParseError(
                    f"parsing took longer than the {limits.wall_seconds:g} s time limit",
                    filename=name,
                ) from None
            except asyncio.IncompleteReadError:
                code = await process.wait()
                raise DocumentParseError(_death(code, limits), filename=name) from None
            waited += time.monotonic() - started
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


def _death(code: int, limits: ChildLimits) -> str:
    """Why a child that exited without a last frame stopped, as the file's error says it."""
    if limits.cpu_seconds and code == -signal.SIGXCPU:  # the kernel's signal past RLIMIT_CPU
        return f"parsing used more than the {limits.cpu_seconds} s CPU-time limit"
    memory = f"; the {limits.memory_words()}" if limits.memory_bytes else ""
    return f"the parser stopped unexpectedly ({describe_exit(code)}{memory})"


def _child(niceness: int, limits: ChildLimits, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """The child's side: read the work, send batches of chunks, then the end or the error."""
    lower_this_thread(niceness)
    _limit_this_process(limits)
    # A parser's warnings name the file; the caller's log names documents by id, and the
    # file's failure reaches the caller as its error.
    logging.disable(logging.WARNING)

    def send(kind: str, value: object) -> None:
        stdout.write(frames.encode((kind, value)))
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
        limit = address_space.current_limit()
        if limits.memory_bytes and limit and _near_memory_limit(exc, limit):
            words = limits.memory_words(ocr_started=limit > limits.memory_bytes)
            exc = DocumentParseError(f"parsing needed more than the {words}", filename=name)
        send("error", _portable(exc, name))
        return
    send("end", None)


def _limit_this_process(limits: ChildLimits) -> None:
    """Set the operating system's limits of `limits` on this process."""
    import resource

    if limits.memory_bytes:
        address_space.hold(limits.memory_bytes, limits.ocr_memory_bytes or 0)
    if limits.cpu_seconds:
        used = resource.getrusage(resource.RUSAGE_SELF)
        spent = int(used.ru_utime + used.ru_stime)  # the interpreter's start is not the file's
        soft = spent + limits.cpu_seconds
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))


def _near_memory_limit(error: BaseException, memory_bytes: int) -> bool:
    """Whether `error` came of the memory limit: a MemoryError, or any error (libraries
    word allocation failures their own way) once the address space neared the limit."""
    if isinstance(error, MemoryError) or isinstance(error.__cause__, MemoryError):
        return True
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            peak = next(line for line in status if line.startswith("VmPeak:"))
    except (OSError, StopIteration):
        return False
    return int(peak.split()[1]) * 1024 >= _MEMORY_SHARE * memory_bytes


def _portable(exc: Exception, name: str) -> BaseException:
    """`exc` if it survives pickling, else a DocumentParseError naming file `name`, with the
    error's words."""
    sent = frames.portable(exc)
    if sent is exc:
        return exc
    return DocumentParseError(f"{type(exc).__name__}: {exc}", filename=name)


if __name__ == "__main__":
    # The frames get the real stdout alone: whatever a library prints goes to stderr, the
    # caller's (so does a traceback of the child failing to start).
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    memory, cpu, ocr_memory = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    _child(
        int(sys.argv[1]),
        ChildLimits(
            memory_bytes=memory or None,
            cpu_seconds=cpu or None,
            ocr_memory_bytes=ocr_memory or None,
        ),
        sys.stdin.buffer,
        channel,
    )
