"""A base for objects that hold resources (connections, files) until `aclose()`."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class AsyncClosable:
    """`await obj.aclose()` or `async with obj:` releases what the object holds; the default
    `aclose()` holds nothing and does nothing."""

    async def aclose(self) -> None:
        """Release held resources; a no-op unless a subclass holds some."""
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
