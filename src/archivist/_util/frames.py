"""Pickled messages over a byte stream, each framed by its 8-byte length.

The channel between Archivist and the child processes it starts (a parse sandbox, a store
process). Frames are unpickled, so both ends must be this library's own code.
"""

from __future__ import annotations

import asyncio
import pickle
import struct
from typing import Any

_LENGTH = struct.Struct("!Q")


def encode(message: object) -> bytes:
    """`message` pickled, behind its length."""
    body = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(body)) + body


async def read_body(reader: asyncio.StreamReader) -> bytes:
    """The next frame's pickled body; `asyncio.IncompleteReadError` once the stream ends."""
    header = await reader.readexactly(_LENGTH.size)
    return await reader.readexactly(_LENGTH.unpack(header)[0])


async def read(reader: asyncio.StreamReader) -> Any:
    """The next message (as trusted as the code that sent it);
    `asyncio.IncompleteReadError` once the stream ends."""
    return pickle.loads(await read_body(reader))


def portable(error: BaseException) -> BaseException:
    """`error` if it survives pickling, else a RuntimeError with its words."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")
    return error
