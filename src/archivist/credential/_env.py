"""Environment fallback shared by the credentials: an explicit value wins over the variable."""

from __future__ import annotations

import os


def from_env(value: object, variable: str) -> object:
    """Return `value`, or the non-empty environment `variable` when `value` is None."""
    if value is not None:
        return value
    return os.environ.get(variable) or None
