"""Text squeezed for one line of a log or an error message."""

from __future__ import annotations


def one_line(text: str, limit: int = 240) -> str:
    """`text` squeezed onto one line and cut to `limit` characters (an HTML error page too)."""
    squeezed = " ".join(text.split())
    return squeezed if len(squeezed) <= limit else squeezed[: limit - 1] + "…"
