"""Parsers that the chunking child process imports by name (its PYTHONPATH holds this folder):
each tells, in the text it yields, something about the process that parsed the file."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import ClassVar

from archivist.message import TextBlock
from archivist.rag.document import Section
from archivist.rag.parser.base import ParserBase


class _OneSection(ParserBase):
    supported_media_types: ClassVar[list[str]] = ["text/plain"]

    def text(self, file: bytes | str) -> str:
        raise NotImplementedError

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        return [Section(content=TextBlock(text=self.text(file)), source=filename)]


class WhoParses(_OneSection):
    """The parsing process's id and nice value, then the file's text."""

    def text(self, file: bytes | str) -> str:
        assert isinstance(file, str)
        with open(file, encoding="utf-8") as handle:
            body = handle.read()
        return f"pid {os.getpid()} nice {os.getpriority(os.PRIO_PROCESS, 0)} {body}"


class Prints(_OneSection):
    """Writes to stdout while it parses, as some libraries do."""

    def text(self, file: bytes | str) -> str:
        print("a library's chatter", flush=True)
        sys.stdout.buffer.write(b"\x00\x00\x00\x00\x00\x00\x00\x09raw bytes")
        sys.stdout.flush()
        return "printed but parsed"


class Crashes(_OneSection):
    """Dies as a parser crashing in native code does."""

    def text(self, file: bytes | str) -> str:
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")


class Slow(ParserBase):
    """Many Sections, slowly, recording its process id first: for stopping it midway."""

    supported_media_types: ClassVar[list[str]] = ["text/plain"]

    def __init__(self, pid_file: str) -> None:
        self.pid_file = pid_file

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        raise NotImplementedError

    async def stream_sections(self, file: bytes | str, filename: str) -> AsyncIterator[Section]:
        import asyncio

        with open(self.pid_file, "w") as handle:
            handle.write(str(os.getpid()))
        for n in range(100_000):
            yield Section(content=TextBlock(text=f"section {n} " * 50), source=filename)
            await asyncio.sleep(0.01)


class _Unpicklable(Exception):
    """An error that cannot cross a process boundary (it holds a lock)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        import threading

        self.lock = threading.Lock()


class RaisesUnpicklable(_OneSection):
    """Fails with an error that does not pickle, as some libraries' errors do not."""

    def text(self, file: bytes | str) -> str:
        raise _Unpicklable("the library's own words")


class Hogs(_OneSection):
    """Asks for far more memory than a parse should need, a chunk of it at a time."""

    def text(self, file: bytes | str) -> str:
        held = [bytearray(64 * 1024 * 1024) for _ in range(64)]  # 4 GiB
        return f"held {len(held)}"


class Spins(_OneSection):
    """Computes without end, as a parser caught in a pathological input does."""

    def text(self, file: bytes | str) -> str:
        n = 0
        while True:
            n += 1


class ClaimsThenHogs(_OneSection):
    """Claims the OCR reserve as the OCR step does, then asks for far more memory."""

    def text(self, file: bytes | str) -> str:
        from archivist._util import address_space

        address_space.claim_reserve()
        held = [bytearray(64 * 1024 * 1024) for _ in range(64)]  # 4 GiB
        return f"held {len(held)}"
