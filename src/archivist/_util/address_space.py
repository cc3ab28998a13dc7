"""An address-space limit with a reserve: a process held below its ceiling until a step that
needs more (an OCR engine's models) claims the rest.

A parse child limits its address space so that a hostile file cannot take a machine's
memory. OCR's models need more than parsing does; rather than raising every file's limit,
the child starts with the parsing limit as its soft limit and the reserve above it as the
hard one, and the OCR step raises the soft limit to the hard one when a page is first read.
Outside such a child (no reserve held) claiming does nothing.
"""

from __future__ import annotations

_reserve_held = False


def hold(limit_bytes: int, reserve_bytes: int = 0) -> None:
    """Limit this process's address space to `limit_bytes`, with `reserve_bytes` more that
    `claim_reserve` may release later (Unix)."""
    import resource

    global _reserve_held
    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes + reserve_bytes))
    _reserve_held = reserve_bytes > 0


def claim_reserve() -> bool:
    """Raise this process's address-space limit to the ceiling `hold` set; True if it was
    raised now, False if no reserve was held (or it was claimed already)."""
    global _reserve_held
    if not _reserve_held:
        return False
    import resource

    _, ceiling = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
    _reserve_held = False
    return True


def current_limit() -> int | None:
    """This process's address-space limit in bytes (None: unlimited, or not Unix)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft
