"""A parser the parsing child imports by name (its PYTHONPATH holds this folder): it writes
the nice value of the thread that parses to a file, since it runs in another process."""

from __future__ import annotations

import os
import threading
from typing import ClassVar

from archivist.message import TextBlock
from archivist.rag.document import Section
from archivist.rag.parser.base import ParserBase


def niceness() -> int:
    """The nice value of the calling thread."""
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


class RecordsNiceness(ParserBase):
    """One Section; appends the nice value of the thread that parses to `record`."""

    supported_media_types: ClassVar[list[str]] = ["text/plain"]

    def __init__(self, record: str) -> None:
        self.record = record

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        with open(self.record, "a", encoding="ascii") as out:
            out.write(f"{niceness()}\n")
        return [Section(content=TextBlock(text="a passage to chunk"), source=filename)]
