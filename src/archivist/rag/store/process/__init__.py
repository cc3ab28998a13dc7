"""A store run in a child process: the engine's work competes with the caller's threads for
the CPU only, never for the caller's GIL."""

from archivist.rag.store.process.store import ProcessStore, StoreProcessError

__all__ = ["ProcessStore", "StoreProcessError"]
